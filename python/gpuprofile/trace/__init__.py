from gpuprofile.trace.model import SCHEMA, Trace, empty_table, make_table

__all__ = ["SCHEMA", "Trace", "empty_table", "make_table"]
