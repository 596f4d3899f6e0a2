"""Reports rendered from a summary document: one module per format."""
