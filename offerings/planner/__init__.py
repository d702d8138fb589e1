"""The cluster planner: N GPUs on one fabric, every way to buy them (`/plan/`, `/api/plan`)."""
