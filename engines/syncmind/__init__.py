"""SyncMind / SyncBench: out-of-sync recovery of coding agents (Guo et al., ICML 2025).

Instances are built from real git histories (a function rolled back to an older commit while the
repository moved on, so its unit test fails); an agent explores, asks a collaborator or proposes a fix
under a turn and money budget; a proposal is verified by running the test file in a sandbox.
"""
