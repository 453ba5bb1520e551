"""Print template.yaml as CloudFormation after the SAM transform, as JSON on stdout.

Runs under aws-sam-cli's own interpreter (``.venv-sam/bin/python tests/infra/sam_transform.py
template.yaml``), whose samtranslator is the one ``sam validate`` and ``sam deploy`` use: the
project virtualenv does not carry it (cfn-lint 1.x stopped depending on it). Local code paths
become placeholder S3 URIs, as ``sam validate`` does; no AWS call is made (the template names
no managed policy by name, so the managed-policy map is empty).
"""

from __future__ import annotations

import json
import os
import sys

from samcli.yamlhelper import yaml_parse
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator

URI_PROPERTIES = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
    "AWS::Serverless::StateMachine": "DefinitionUri",
}


def main(path: str) -> None:
    # Pseudo parameters (AWS::Region) need a region; nothing is called.
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with open(path, encoding="utf-8") as fh:
        template = yaml_parse(fh.read())
    for resource in template.get("Resources", {}).values():
        prop = URI_PROPERTIES.get(resource.get("Type"))
        if prop and isinstance(resource.get("Properties", {}).get(prop), str):
            resource["Properties"][prop] = "s3://placeholder-bucket/placeholder-key"
    globals_ = template.get("Globals", {}).get("Function", {})
    if isinstance(globals_.get("CodeUri"), str):
        globals_["CodeUri"] = "s3://placeholder-bucket/placeholder-key"
    translator = Translator(managed_policy_map=None, sam_parser=Parser(), plugins=[])
    out = translator.translate(sam_template=template, parameter_values={},
                               get_managed_policy_map=lambda: {})
    json.dump(out, sys.stdout, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1])
