"""The firewall engine benchmark: indexed engine, reference scan and Cedar on one core."""
