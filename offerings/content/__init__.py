"""The content pages: the explainer, the FAQ, the data page, the sitemap and robots.txt, with
their markup, stated figures, diagrams and template tags."""
