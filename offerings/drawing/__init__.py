"""Server-drawn SVG: the shapes every diagram is drawn with (svg) and the catalog's own diagrams,
the node topology and the price history on the detail page (diagrams)."""
