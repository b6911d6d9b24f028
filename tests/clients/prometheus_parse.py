"""Parses the Prometheus text format read on stdin with the Prometheus
project's own Python parser, as a scraper would; prints every sample as
JSON: [{"family", "type", "name", "labels", "value"}]. Exits non-zero on
anything the parser refuses."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        samples.append({
            "family": family.name,
            "type": family.type,
            "name": sample.name,
            "labels": sample.labels,
            "value": sample.value,
        })
json.dump(samples, sys.stdout)
