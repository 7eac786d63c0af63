"""The proof: agents compiled into a graph (`qls-graph/1`), the hunter and its QG rules, and
`stalwart verify`'s report. The pure engine lives in `proof.engine`."""
