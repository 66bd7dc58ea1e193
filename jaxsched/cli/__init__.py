"""Command-line interface (``jaxsched``)."""
