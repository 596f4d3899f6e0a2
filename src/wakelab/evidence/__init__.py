"""The evidence bundle: schema, atomic writers and a validating loader.

Writing (``bundle``) is on the measuring side and uses only the standard library; loading (``load``) validates against
``summary.schema.json`` with the jsonschema package, imported lazily.
"""

from wakelab.evidence.bundle import SAMPLES_SCHEMA, SCHEMA_NAME, SCHEMA_VERSION, atomic_write_text, write_bundle

__all__ = ["SAMPLES_SCHEMA", "SCHEMA_NAME", "SCHEMA_VERSION", "atomic_write_text", "write_bundle"]
