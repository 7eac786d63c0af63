"""An SDK session connected to a console, deciding in process from its bundle, beside a local one."""
