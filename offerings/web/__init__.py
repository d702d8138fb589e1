"""What every page of the site shares: the response cache, middleware, health, drawing."""
