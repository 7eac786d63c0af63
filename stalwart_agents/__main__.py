"""`python -m stalwart_agents` runs the `stalwart` command."""

from stalwart_agents.cli import main

raise SystemExit(main())
