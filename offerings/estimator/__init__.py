"""The cost estimator: a pure model of a training or inference step (core), its calibration
against published collective benchmarks, the sentences it explains itself with, and its views."""
