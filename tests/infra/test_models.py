"""template.yaml's model choices: the parameters, the Rules that refuse combinations that
cannot work, and what each choice creates (environment, ModelAccessPolicy, the
bedrock-runtime endpoint, the NAT gateway).

No AWS: the template is rendered for a set of parameter values the way CloudFormation does
it before the SAM transform -- Conditions evaluated, resources whose condition is false
dropped, ``Fn::If`` resolved, ``AWS::NoValue`` removed, ``Fn::Sub`` filled in -- and the
Rules' assertions evaluated on the same values.
"""

from __future__ import annotations

import re

import pytest
import test_template as base

PSEUDO = {"AWS::Region": "us-east-1", "AWS::AccountId": "123456789012", "AWS::Partition": "aws",
          "AWS::StackName": "strata-dev", "AWS::URLSuffix": "amazonaws.com",
          "AWS::NoValue": None}
NO_VALUE = object()

# The functions that embed, extract or judge: the routers whose requests call a model (search
# embeds the query; memories embeds and judges; reflect reflects; ingest and mcp run the
# pipeline) and the state machine's step function.
MODEL_ROUTERS = {"search", "memories", "reflect", "ingest", "mcp"}
MODEL_FUNCTIONS_BESIDES_ROUTES = {"IngestStepFunction"}
MODEL_POLICY = {"Fn::If": ["CallsModels", {"Ref": "ModelAccessPolicy"}, {"Ref": "AWS::NoValue"}]}


@pytest.fixture(scope="module")
def template() -> dict:
    return base.cfn_yaml.load(str(base.TEMPLATE_PATH))


# ------------------------------------------------------------------------------ rendering


def parameter_values(template: dict, given: dict[str, str]) -> dict[str, str]:
    unknown = set(given) - set(template["Parameters"])
    assert not unknown, f"not parameters of the template: {unknown}"
    values = {n: str(p.get("Default", "")) for n, p in template["Parameters"].items()}
    values.update(given)
    return values


def ref_value(name: str, values: dict):
    if name in values:
        value = values[name]
        if template_types.get(name) == "CommaDelimitedList":
            return value.split(",")
        return value
    return PSEUDO[name]


template_types: dict[str, str] = {}


def condition_value(node, values: dict, conditions: dict):
    """A condition or rule expression's value (bool, string or list)."""
    if isinstance(node, (str, bool)):
        return node
    if isinstance(node, list):
        return [condition_value(n, values, conditions) for n in node]
    [(fn, arg)] = node.items()
    ev = lambda n: condition_value(n, values, conditions)  # noqa: E731
    if fn == "Ref":
        return ref_value(arg, values)
    if fn == "Condition":
        return conditions[arg]
    if fn == "Fn::Equals":
        a, b = ev(arg[0]), ev(arg[1])
        return a == b
    if fn == "Fn::Not":
        return not ev(arg[0])
    if fn == "Fn::And":
        return all(ev(a) for a in arg)
    if fn == "Fn::Or":
        return any(ev(a) for a in arg)
    if fn == "Fn::Contains":
        return ev(arg[1]) in ev(arg[0])
    if fn == "Fn::Join":
        return arg[0].join(ev(arg[1]))
    raise AssertionError(f"the renderer does not know {fn}")


def evaluate_conditions(template: dict, values: dict) -> dict[str, bool]:
    pending = dict(template.get("Conditions", {}))
    conditions: dict[str, bool] = {}
    while pending:
        for name, expr in list(pending.items()):
            try:
                conditions[name] = bool(condition_value(expr, values, conditions))
            except KeyError:
                continue  # refers to a condition not evaluated yet
            del pending[name]
    return conditions


def broken_rules(template: dict, values: dict) -> list[str]:
    """The AssertDescription of every Rules assertion the values break."""
    broken = []
    for rule in template.get("Rules", {}).values():
        if "RuleCondition" in rule and not condition_value(rule["RuleCondition"], values, {}):
            continue
        broken += [a["AssertDescription"] for a in rule["Assertions"]
                   if not condition_value(a["Assert"], values, {})]
    return broken


def substitute(text: str, values: dict, variables: dict | None = None) -> str:
    def one(match):
        name = match.group(1)
        if variables and name in variables:
            return str(variables[name])
        if "." not in name and (name in values or name in PSEUDO):
            return str(ref_value(name, values))
        return "«" + name.split(".")[0] + "»"  # ${Resource} or ${Resource.Attr}

    return re.sub(r"\$\{([^}!]+)\}", one, text)


def resolve(node, values: dict, conditions: dict):
    """The node with Fn::If taken, AWS::NoValue removed and Fn::Sub of parameters filled in."""
    if isinstance(node, list):
        out = [resolve(n, values, conditions) for n in node]
        return [n for n in out if n is not NO_VALUE]
    if not isinstance(node, dict):
        return node
    if list(node) == ["Fn::If"]:
        name, yes, no = node["Fn::If"]
        return resolve(yes if conditions[name] else no, values, conditions)
    if node == {"Ref": "AWS::NoValue"}:
        return NO_VALUE
    if list(node) == ["Ref"] and node["Ref"] in values:
        return ref_value(node["Ref"], values)
    if list(node) == ["Ref"] and node["Ref"] in PSEUDO:
        return PSEUDO[node["Ref"]]
    if list(node) == ["Fn::Sub"]:
        arg = node["Fn::Sub"]
        if isinstance(arg, str):
            return substitute(arg, values)
        variables = {k: resolve(v, values, conditions) for k, v in arg[1].items()}
        if all(isinstance(v, str) for v in variables.values()):
            return substitute(arg[0], values, variables)
        return {"Fn::Sub": [arg[0], variables]}
    out = {k: resolve(v, values, conditions) for k, v in node.items()}
    return {k: v for k, v in out.items() if v is not NO_VALUE}


def render(template: dict, **given: str) -> dict:
    """The template as CloudFormation would deploy it for these parameter values (after
    checking that the Rules accept them)."""
    template_types.update({n: p["Type"] for n, p in template["Parameters"].items()})
    values = parameter_values(template, given)
    broken = broken_rules(template, values)
    assert not broken, f"the Rules refuse {given}: {broken}"
    conditions = evaluate_conditions(template, values)
    resources = {n: r for n, r in template["Resources"].items()
                 if conditions.get(r.get("Condition"), True)}
    rendered = {"Globals": resolve(template["Globals"], values, conditions),
                "Resources": resolve(resources, values, conditions),
                "Conditions": conditions}
    return rendered


def dangling(rendered: dict) -> list[str]:
    """References to resources the rendering dropped (a deploy would fail on them)."""
    names = set(rendered["Resources"])
    found = []

    def walk(node, where):
        if isinstance(node, list):
            for n in node:
                walk(n, where)
        elif isinstance(node, dict) and list(node) == ["Fn::Sub"]:
            text, variables = (node["Fn::Sub"], {}) if isinstance(node["Fn::Sub"], str) else node["Fn::Sub"]
            found.extend(f"{where} -> {m}" for m in re.findall(r"\$\{([\w:]+)", text)
                         if m not in names and m not in variables and "::" not in m)
            walk(variables, where)
        elif isinstance(node, dict):
            target = base.ref_target(node)
            if target and target not in names and "::" not in target:
                found.append(f"{where} -> {target}")
            for value in node.values():
                walk(value, where)
        elif isinstance(node, str):
            found.extend(f"{where} -> {m}" for m in re.findall(r"«(\w+)»", node)
                         if m not in names)

    for name, resource in rendered["Resources"].items():
        walk(resource, name)
        depends = resource.get("DependsOn", [])
        found += [f"{name} DependsOn {d}" for d in ([depends] if isinstance(depends, str) else depends)
                  if d not in names]
    walk(rendered["Globals"], "Globals")
    return found


# --------------------------------------------------------------------------------- checks


def model_functions(template: dict) -> set[str]:
    served = {function for _, path, function in base.http_routes(template)
              if base.router_for(path) in MODEL_ROUTERS}
    return served | MODEL_FUNCTIONS_BESIDES_ROUTES


def bedrock_statements(rendered: dict) -> list[dict]:
    policy = rendered["Resources"].get("ModelAccessPolicy")
    if not policy:
        return []
    return [s for s in policy["Properties"]["PolicyDocument"]["Statement"]
            if any(str(a).startswith("bedrock:") for a in _list(s["Action"]))]


def _list(value) -> list:
    return value if isinstance(value, list) else [value]


def bedrock_grant_problems(statements: list[dict], model_ids: set[str]) -> list[str]:
    """Bedrock statements that grant more than InvokeModel on the chosen models: an action
    other than bedrock:InvokeModel, a resource naming another model, or a wildcard model not
    bound by bedrock:InferenceProfileArn to the profile of a chosen id."""
    problems = []
    profiles = {f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{m}" for m in model_ids}
    for s in statements:
        if _list(s["Action"]) != ["bedrock:InvokeModel"]:
            problems.append(f"actions {s['Action']}")
        for resource in _list(s["Resource"]):
            if resource == "*" or not isinstance(resource, str):
                problems.append(f"resource {resource!r}")
                continue
            model = resource.rsplit("/", 1)[-1]
            if model == "*":
                bound = s.get("Condition", {}).get("StringEquals", {}).get("bedrock:InferenceProfileArn")
                if bound not in profiles:
                    problems.append(f"{resource} not bound to a chosen profile")
            elif model not in model_ids:
                problems.append(f"{resource} names another model")
    return problems


def env(rendered: dict) -> dict:
    return rendered["Globals"]["Function"]["Environment"]["Variables"]


def function_policies(rendered: dict, name: str) -> list:
    return rendered["Resources"][name]["Properties"].get("Policies", [])


NAT = {"InternetGateway", "InternetGatewayAttachment", "PublicSubnet", "PublicRouteTable",
       "PublicDefaultRoute", "PublicSubnetRouteTable", "NatAddress", "NatGateway",
       "PrivateDefaultRoute"}

# Each choice of models (and of network) and what it must create.
CHOICES = [
    pytest.param({}, dict(endpoint=True, nat=False, policy=True,
                          models={"amazon.titan-embed-text-v2:0", "us.amazon.nova-lite-v1:0"}),
                 id="defaults-bedrock"),
    pytest.param(dict(Embedder="hash", ExtractionModel="none"),
                 dict(endpoint=False, nat=False, policy=False, models=set()), id="no-models"),
    pytest.param(dict(Embedder="openai", EmbeddingModelId="text-embedding-3-small",
                      EmbeddingDim="1536",
                      EmbeddingApiKeySecretArn="arn:aws:secretsmanager:us-east-1:123456789012:secret:openai-AbC",
                      ExtractionModel="openai", ExtractionModelId="gpt-4o-mini",
                      LlmBaseUrl="https://api.openai.com/v1",
                      LlmApiKeySecretArn="arn:aws:secretsmanager:us-east-1:123456789012:secret:llm-XyZ",
                      EnableNatGateway="true"),
                 dict(endpoint=False, nat=True, policy=True, models=set()), id="openai-nat"),
    pytest.param(dict(ExtractionModel="openai", ExtractionModelId="llama-3.1-8b",
                      LlmBaseUrl="https://llm.example.com/v1", EnableNatGateway="true"),
                 dict(endpoint=True, nat=True, policy=True,
                      models={"amazon.titan-embed-text-v2:0"}), id="bedrock-embedder-openai-llm"),
    pytest.param(dict(ExtractionModelId="anthropic.claude-3-haiku-20240307-v1:0",
                      EmbeddingDim="1024", ExistingVpcId="vpc-0abc",
                      ExistingPrivateSubnetIds="subnet-a,subnet-b"),
                 dict(endpoint=False, nat=False, policy=True,
                      models={"amazon.titan-embed-text-v2:0",
                              "anthropic.claude-3-haiku-20240307-v1:0"}), id="existing-vpc"),
]


@pytest.mark.parametrize("given, expect", CHOICES)
def test_each_model_choice_renders_what_it_needs_and_nothing_else(template, given, expect):
    """Given a choice of embedder, extraction model and network
    When the template is rendered for it
    Then no reference dangles; every function gets the chosen settings (STRATA_EMBEDDER,
    the model ids, the dimension, the region only when Bedrock is used); the bedrock-runtime
    endpoint exists exactly when a Bedrock model is chosen in the stack's own VPC, the NAT
    gateway exactly when asked for; ModelAccessPolicy exists when a model or key is used,
    its Bedrock grants name only the chosen models, and it is attached to exactly the
    functions that embed or extract."""
    rendered = render(template, **given)
    resources = rendered["Resources"]
    values = parameter_values(template, given)
    assert not dangling(rendered), dangling(rendered)

    variables = env(rendered)
    assert variables["STRATA_EMBEDDER"] == values["Embedder"]
    assert variables["STRATA_EMBEDDING_DIM"] == values["EmbeddingDim"]
    assert variables["STRATA_LLM_PROVIDER"] == values["ExtractionModel"]
    if values["Embedder"] == "hash":
        assert "STRATA_EMBEDDING_MODEL" not in variables
    else:
        assert variables["STRATA_EMBEDDING_MODEL"] == values["EmbeddingModelId"]
    if values["ExtractionModel"] == "none":
        assert "STRATA_LLM_MODEL" not in variables
    else:
        assert variables["STRATA_LLM_MODEL"] == values["ExtractionModelId"]
    uses_bedrock = "bedrock" in (values["Embedder"], values["ExtractionModel"])
    assert ("STRATA_BEDROCK_REGION" in variables) == uses_bedrock
    for setting, parameter in [("STRATA_EMBEDDING_BASE_URL", "EmbeddingBaseUrl"),
                               ("STRATA_EMBEDDING_API_KEY_SECRET_ARN", "EmbeddingApiKeySecretArn"),
                               ("STRATA_LLM_BASE_URL", "LlmBaseUrl"),
                               ("STRATA_LLM_API_KEY_SECRET_ARN", "LlmApiKeySecretArn")]:
        assert variables.get(setting, "") == values[parameter], setting

    assert ("BedrockRuntimeEndpoint" in resources) == expect["endpoint"]
    assert NAT <= set(resources) if expect["nat"] else not NAT & set(resources)
    assert ("ModelAccessPolicy" in resources) == expect["policy"]

    statements = bedrock_statements(rendered)
    assert not bedrock_grant_problems(statements, expect["models"])
    granted = {r.rsplit("/", 1)[-1] for s in statements for r in _list(s["Resource"])} - {"*"}
    assert granted == expect["models"]
    if expect["policy"]:
        secrets = [s["Resource"] for s in resources["ModelAccessPolicy"]["Properties"]
                   ["PolicyDocument"]["Statement"] if s["Action"] == "secretsmanager:GetSecretValue"]
        assert sorted(secrets) == sorted(v for k, v in values.items()
                                         if k.endswith("ApiKeySecretArn") and v)

    attached = {n for n, r in resources.items() if r["Type"] == "AWS::Serverless::Function"
                and {"Ref": "ModelAccessPolicy"} in r["Properties"].get("Policies", [])}
    assert attached == (model_functions(template) if expect["policy"] else set())


def test_model_functions_are_the_ones_serving_model_routes(template):
    """The policy goes on the functions serving search, memories, reflect, ingest and mcp
    and on the step function; the others (authorizer, health, review, admin, maintenance,
    migrate) carry none, and each function's Policies say so in the template itself."""
    wanted = model_functions(template)
    assert {"SearchFunction", "MemoriesFunction", "IngestFunction", "McpFunction",
            "IngestStepFunction"} == wanted
    for name, function in base.resources_of(template, "AWS::Serverless::Function").items():
        has = MODEL_POLICY in function["Properties"].get("Policies", [])
        assert has == (name in wanted), name


def test_the_bedrock_grant_check_catches_broader_grants():
    """Control for the IAM checks above: each kind of over-grant is reported."""
    chosen = {"us.amazon.nova-lite-v1:0"}
    fm = "arn:aws:bedrock:us-east-1::foundation-model/"
    assert bedrock_grant_problems([{"Action": "bedrock:*", "Resource": fm + "us.amazon.nova-lite-v1:0"}], chosen)
    assert bedrock_grant_problems([{"Action": "bedrock:InvokeModel", "Resource": "*"}], chosen)
    assert bedrock_grant_problems([{"Action": "bedrock:InvokeModel", "Resource": fm + "*"}], chosen)
    assert bedrock_grant_problems([{"Action": "bedrock:InvokeModel", "Resource": fm + "amazon.nova-pro-v1:0"}], chosen)
    assert not bedrock_grant_problems([{
        "Action": "bedrock:InvokeModel", "Resource": "arn:aws:bedrock:*::foundation-model/*",
        "Condition": {"StringEquals": {"bedrock:InferenceProfileArn":
                      "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-lite-v1:0"}}}],
        chosen)


def test_bedrock_endpoint_admits_the_functions_over_https(template):
    """Given the default (Bedrock) choice
    When the stack creates its network
    Then bedrock-runtime has an interface endpoint with private DNS in both private subnets,
    whose security group admits 443 from the functions' group, which may send 443; and the
    functions that wait for the migration wait for the endpoint too."""
    resources = render(template)["Resources"]
    endpoint = resources["BedrockRuntimeEndpoint"]["Properties"]
    assert endpoint["ServiceName"] == "com.amazonaws.us-east-1.bedrock-runtime"
    assert endpoint["VpcEndpointType"] == "Interface" and endpoint["PrivateDnsEnabled"] is True
    assert endpoint["SubnetIds"] == [{"Ref": "PrivateSubnetA"}, {"Ref": "PrivateSubnetB"}]
    [group] = [base.ref_target(g) for g in endpoint["SecurityGroupIds"]]
    ingress = resources[group]["Properties"]["SecurityGroupIngress"]
    assert any(r["FromPort"] <= 443 <= r["ToPort"] and r["IpProtocol"] == "tcp"
               and base.ref_target(r["SourceSecurityGroupId"]) == "FunctionSecurityGroup"
               for r in ingress)
    egress = resources["FunctionSecurityGroup"]["Properties"]["SecurityGroupEgress"]
    assert any(r["FromPort"] <= 443 <= r["ToPort"] for r in egress)
    ready = resources["NetworkReady"]["Metadata"]["DependsOnWhenCreated"]
    assert {"Ref": "BedrockRuntimeEndpoint"} in ready
    assert "NetworkReady" in resources["DbMigrations"]["DependsOn"]
    assert {"Ref": "PrivateDefaultRoute"} not in ready  # control: no NAT asked for


def test_nat_gateway_routes_the_private_subnets_out(template):
    """With EnableNatGateway the private route table's default route goes to a NAT gateway in
    a public subnet whose own default route is the internet gateway."""
    resources = render(template, EnableNatGateway="true")["Resources"]
    private = resources["PrivateDefaultRoute"]["Properties"]
    assert base.ref_target(private["RouteTableId"]) == "PrivateRouteTable"
    assert private["DestinationCidrBlock"] == "0.0.0.0/0"
    nat = resources[base.ref_target(private["NatGatewayId"])]["Properties"]
    assert base.ref_target(nat["SubnetId"]) == "PublicSubnet"
    public = resources["PublicDefaultRoute"]["Properties"]
    assert base.ref_target(public["GatewayId"]) == "InternetGateway"
    assert base.ref_target(resources["PublicSubnetRouteTable"]["Properties"]["SubnetId"]) == "PublicSubnet"


REFUSED = [
    pytest.param(dict(EmbeddingDim="384"), "256, 512 or 1024", id="titan-dimension"),
    pytest.param(dict(Embedder="openai", EmbeddingModelId="text-embedding-3-small"),
                 "EnableNatGateway=true", id="openai-without-a-way-out"),
    pytest.param(dict(ExtractionModel="openai", ExtractionModelId="gpt-4o-mini",
                      EnableNatGateway="true"), "needs LlmBaseUrl", id="openai-llm-without-url"),
    pytest.param(dict(ExtractionModel="openai", LlmBaseUrl="https://x.example/v1",
                      EnableNatGateway="true"), "ExtractionModelId set", id="openai-llm-bedrock-id"),
    pytest.param(dict(Embedder="openai", EnableNatGateway="true"), "EmbeddingModelId set",
                 id="openai-embedder-titan-id"),
    pytest.param(dict(EmbeddingBaseUrl="https://x.example/v1"), "only with Embedder openai",
                 id="embedding-url-unused"),
    pytest.param(dict(LlmApiKeySecretArn="arn:aws:secretsmanager:us-east-1:123456789012:secret:k"),
                 "only with ExtractionModel openai", id="llm-key-unused"),
    pytest.param(dict(EnableNatGateway="true", ExistingVpcId="vpc-0abc",
                      ExistingPrivateSubnetIds="subnet-a,subnet-b"), "stack's own VPC",
                 id="nat-in-existing-vpc"),
]


@pytest.mark.parametrize("given, says", REFUSED)
def test_rules_refuse_model_choices_that_cannot_work(template, given, says):
    """Given a combination the code would refuse or the functions could not reach
    Then a Rule refuses it before any resource changes, saying what to set; the defaults
    pass every Rule (control)."""
    template_types.update({n: p["Type"] for n, p in template["Parameters"].items()})
    assert not broken_rules(template, parameter_values(template, {}))
    broken = broken_rules(template, parameter_values(template, given))
    assert any(says in text for text in broken), broken


def test_rendering_resolves_conditions_as_cloudformation_does(template):
    """Control for the renderer: a dropped resource's reference is reported, and a false
    condition drops its resource."""
    rendered = render(template, Embedder="hash", ExtractionModel="none")
    assert "BedrockRuntimeEndpoint" not in rendered["Resources"]
    rendered["Resources"]["X"] = {"Type": "T", "Properties": {"A": {"Ref": "BedrockRuntimeEndpoint"}}}
    assert dangling(rendered) == ["X -> BedrockRuntimeEndpoint"]


def test_samconfig_environments_pass_the_rules(template):
    """dev and prod choose models the Rules accept, so `sam deploy --config-env` gets past
    the parameter check; a 384-dimension Bedrock setting would not (control)."""
    template_types.update({n: p["Type"] for n, p in template["Parameters"].items()})
    for env_name in ("dev", "prod"):
        values = parameter_values(template, base.samconfig_parameters(env_name))
        assert values["Embedder"] == "bedrock" and values["ExtractionModel"] == "bedrock"
        assert not broken_rules(template, values), env_name
        assert broken_rules(template, dict(values, EmbeddingDim="384"))
