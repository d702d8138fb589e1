"""The filter table: its parameters, counts, rows, views, exports, feed and OpenAPI document."""
