"""Views of the analyses as data (the versioned report dict) and as plain text."""
