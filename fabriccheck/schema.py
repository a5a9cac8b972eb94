"""The JSON Schema of the JSON report (`fabriccheck schema`), made from the pydantic models that the report is.

Its version is the report's `schema_version` (report.REPORT_SCHEMA_VERSION). Within a version, fields may be added
(a consumer should ignore what it does not know) and text may change (messages, notes, reasons); a field is not
removed, renamed or given another type, and an enumeration (severity, status, confidence) loses no value, without
a new schema_version.
"""

from __future__ import annotations

from typing import Any

from fabriccheck.report import REPORT_SCHEMA_VERSION, Report

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def report_schema() -> dict[str, Any]:
    """The schema of what `--format json` writes (the report as serialized, not as a Python caller builds it)."""
    schema = Report.model_json_schema(mode="serialization")
    schema["properties"]["schema_version"]["const"] = REPORT_SCHEMA_VERSION
    return {
        "$schema": DIALECT,
        "$id": f"fabriccheck-report-v{REPORT_SCHEMA_VERSION}.json",
        "title": f"fabriccheck JSON report, schema_version {REPORT_SCHEMA_VERSION}",
        "description": "What `fabriccheck ... --format json` writes. Fields may be added within a schema_version; "
        "none is removed, renamed or retyped without a new one.",
        **{k: v for k, v in schema.items() if k != "title"},
    }
