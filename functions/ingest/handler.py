"""/v1/ingest behind the HTTP API: the core's `ingest` router.

With STRATA_INGEST_STATE_MACHINE_ARN set, POST /v1/ingest opens a receipt, starts one state
machine execution named after it and answers with the queued receipt; GET
/v1/ingest/{receipt_id} polls it. ``"wait": true`` runs the same steps in this function
instead (strata.ingest.service.ingest), so it answers with the final receipt within the
HTTP API's 30 s: meant for small batches, not for bulk imports.
"""

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("ingest")
coldstart.end()
