"""doc/rest-openapi.json: valid OpenAPI 3.1, and what coin/rest/openapi.py generates."""

from __future__ import annotations

import json
import os

from openapi_spec_validator import validate
from twisted.trial.unittest import SynchronousTestCase

from coin.rest.openapi import DOC_PATH, document, document_bytes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


class OpenAPIDocumentTests(SynchronousTestCase):

    def test_valid_openapi_3_1(self) -> None:
        doc = document()
        self.assertEqual(doc["openapi"], "3.1.0")
        validate(doc)  # raises OpenAPIValidationError

    def test_committed_copy_is_current(self) -> None:
        with open(os.path.join(ROOT, DOC_PATH), "rb") as f:
            committed = f.read()
        if committed != document_bytes():
            self.fail("%s is stale: regenerate it with `python -m coin.rest.openapi`" % DOC_PATH)
        validate(json.loads(committed))

    def test_every_operation_lists_the_common_errors(self) -> None:
        for path, item in document()["paths"].items():
            for operation in item.values():
                self.assertTrue({"200", "404", "500", "503"} <= set(operation["responses"]), path)
