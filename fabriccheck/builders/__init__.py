"""What makes the project's generated files from a checkout: the demo's AWS, Azure and GCP estates and Terraform plans
(fixtures/demo/), the rule pages (docs/rules/), the report schema's page (docs/json-schema.md) and the parsed
cache of the shipped YAML (fabriccheck/data/parsed.json). The scripts under tools/ run them; the tests import them
from here. Each writes into the checkout it sits in (ROOT), never into an installed copy's folder."""
