"""How a type is bought and where its prices are read: its purchase modes, curated or shown by its
current prices (purchase), and the provider's human price page for a price read from an API
(price_pages)."""
