class ExportError(Exception):
    """Raised when a module or its inputs cannot be exported. The message says what and why."""
