"""Evidence from a running cluster: nccl-tests output and NCCL_DEBUG=INFO logs.

The cloud APIs say what is attached; these say what NCCL actually used. `nccl_tests` parses nccl-tests tables
and `nccl_log` streams NCCL logs (bounded memory, line by line); the NCCL2xx rules are rule files
(rules/evidence/) whose checks `registry` holds; `judge` and `bandwidth` turn parsed evidence into
`findings.Finding`s; `reported` makes of what was judged the one report every command writes (report.Report, the
job a file shows as its cluster). The commands that run them are cli/evidence.py, under the same gate as a scan
(gate.py), and every report writer renders it (reports/evidence.py: the job's table).
"""
