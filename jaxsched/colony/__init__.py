"""The parallel two-pass ant colony."""
