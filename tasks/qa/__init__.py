"""qa: QA-pair generation per chunk (``generate`` with offline ``rules``), quality ``flags``,
the durable expert ``review`` table and its HTML ``review_report``; ``run`` is the stage.
"""
