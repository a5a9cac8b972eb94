"""Evidence from a running cluster: nccl-tests output and NCCL_DEBUG=INFO logs.

The cloud APIs say what is attached; these say what NCCL actually used. `nccl_tests` parses nccl-tests tables
and `nccl_log` streams NCCL logs (bounded memory, line by line); the NCCL2xx rules are rule files
(rules/evidence/) whose checks `registry` holds; `judge` turns parsed evidence into `findings.Finding`s;
`report` renders them.
"""
