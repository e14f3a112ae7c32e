"""The notebook widget (anywidget) and its wire format."""
