"""Firewall policies and rules for Stalwart: the engine lives in `firewall.engine`."""
