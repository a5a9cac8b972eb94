"""Evidence from a running cluster: nccl-tests output and NCCL_DEBUG=INFO logs.

The cloud APIs say what is attached; these say what NCCL actually used. `nccl_tests` parses nccl-tests tables
and `nccl_log` streams NCCL logs (bounded memory, line by line); the NCCL2xx rules are rule files
(rules/evidence/) whose checks `registry` holds; `judge` and `bandwidth` turn parsed evidence into
`findings.Finding`s. The commands that run them are cli/evidence.py, under the same gate as a scan (gate.py), and
reports/evidence.py renders what they found.
"""
