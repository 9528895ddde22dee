"""``orchestra serve`` under load (``load``), and the pipeline its runs stream (``pipeline``)."""
