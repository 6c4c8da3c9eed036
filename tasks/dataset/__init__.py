"""dataset: split the working tables, build a content-addressed version, run the Great
Expectations ``quality`` gate and publish through the dataset store (``versions``).
"""
