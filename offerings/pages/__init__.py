"""The pages of one thing: an instance type, a GPU, a provider, a comparison, readiness."""
