"""The cost estimator: a pure model of a training or inference step (core: inputs, outputs and
the job; collectives: how the GPUs talk; estimation: the rows, their verdicts and ranking), its
calibration against published collective benchmarks, the sentences it explains itself with
(phrases), the API and the page (views, page, chart) and its part of the OpenAPI document
(openapi)."""
