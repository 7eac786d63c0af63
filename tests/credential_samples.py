"""One credential of every shape of the credential table (`firewall.engine.credentials`), as an
attacker gets it written. Shared by the engine's own tests (tests/firewall/engine/, no Django) and
the sinks' tests (tests/security/), so that a shape added to the table gets its sample once."""

from __future__ import annotations

SAMPLES: dict[str, str] = {
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bqSECRETBODY\n-----END RSA PRIVATE KEY-----",
    "url_password": "https://deploy:hunter2pass@git.example.com/repo",
    "url_token": "https://hooks.example.com/in?channel=ops&token=9f8e7d6c5b4a3f2e",
    "slack_webhook": "https://hooks.slack.com/services/T0001/B0002/XXXXXXXXXXXXXXXXXXXXXXXX",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "anthropic_key": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "openai_key": "sk-proj-Zyxwvutsrqponmlkjihgfedcba",
    "stalwart_key": "stw_1a2b3c4d_q7Lm2Np8Rs4Tv6Wx9Yz0Ab3Cd5Ef",
    "github_token": "ghp_R2d2C3poBb8Kx9Lm0Nq1Pr4St7Uv5Wy6Za3Yb",
    "slack_token": "xoxb-123456789012-Qw3rTy8UiOp2",
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_key": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer_token": "Authorization: Bearer Vq9Lm2Xc8Rt4Zp7Kd3",
    "basic_auth": "Authorization: Basic ZGVwbG95Omh1bnRlcjJwYXNz",
}
