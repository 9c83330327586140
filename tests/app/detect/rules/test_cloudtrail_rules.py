"""logwarden's own CloudTrail technique rules (app/detect/data/cloudtrail_techniques.yml).

Each rule gets the attack as CloudTrail records it (record shapes as the services write them:
userIdentity of an IAM user, an assumed role, an EC2 instance profile session, an Identity
Center permission set or an AWS service; values anonymised) and the routine administration that
looks like it, which must stay quiet (or low where the rule says so). Records go through the
real cloudtrail parser."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from _rule_events import by_rule, parsed

from logwarden.app.detect import Detector

ACCOUNT = "111122223333"
T0 = datetime(2025, 4, 2, 10, 0, 0, tzinfo=timezone.utc)


# --- identities as CloudTrail writes them ---------------------------------------------------------


def iam_user(name: str = "dev-jenkins") -> dict:
    return {"type": "IAMUser", "principalId": "AIDA4QWERTYUIOPASDFG", "arn": f"arn:aws:iam::{ACCOUNT}:user/{name}",
            "accountId": ACCOUNT, "accessKeyId": "AKIA4QWERTYUIOPASDFG", "userName": name}


def assumed_role(role: str, session: str, issuer_extra: dict | None = None) -> dict:
    return {"type": "AssumedRole", "principalId": f"AROA4QWERTYUIOPASDFG:{session}",
            "arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{session}", "accountId": ACCOUNT,
            "accessKeyId": "ASIA4QWERTYUIOPASDFG",
            "sessionContext": {"sessionIssuer": {"type": "Role", "principalId": "AROA4QWERTYUIOPASDFG",
                                                 "arn": f"arn:aws:iam::{ACCOUNT}:role/{role}", "accountId": ACCOUNT,
                                                 "userName": role},
                               "webIdFederationData": {},
                               "attributes": {"creationDate": "2025-04-02T09:12:40Z", "mfaAuthenticated": "false"},
                               **(issuer_extra or {})}}


def instance_role(instance: str = "i-0a1b2c3d4e5f60718", role: str = "web-ec2-role") -> dict:
    return assumed_role(role, instance, {"ec2RoleDelivery": "2.0"})


def sso_role(user: str = "alice@example.com") -> dict:
    return assumed_role("AWSReservedSSO_AdministratorAccess_0123456789abcdef", user)


def service(name: str) -> dict:
    return {"type": "AWSService", "invokedBy": name}


CLI = "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/linux#6.5.0-1016-aws md/arch#x86_64 lang/python#3.11.8 md/pyimpl#CPython cfg/retry-mode#standard md/installer#exe md/distrib#ubuntu.22 md/prompt#off md/command#{}"
BOTO = "Boto3/1.34.51 md/Botocore#1.34.51 ua/2.0 os/linux#5.15.0-1055-aws md/arch#x86_64 lang/python#3.10.12 md/pyimpl#CPython cfg/retry-mode#legacy Botocore/1.34.51"
BROWSER = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Safari/605.1.15"


def record(name: str, source: str, params: dict | None = None, *, identity: dict | None = None, second: int = 0,
           ip: str = "198.51.100.23", agent: str | None = None, region: str = "us-east-1", error: str | None = None,
           response: dict | None = None, extra: dict | None = None, **top) -> str:
    rec = {"eventVersion": "1.09", "userIdentity": identity or iam_user(),
           "eventTime": (T0 + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "eventSource": source, "eventName": name, "awsRegion": region, "sourceIPAddress": ip,
           "userAgent": agent if agent is not None else CLI.format(name.lower()),
           "requestParameters": params, "responseElements": response,
           "requestID": "7d057399-1e47-45f9-91be-bd950e253b8d", "eventID": f"cbf0f614-9921-48e5-889f-{second:012d}",
           "readOnly": name.startswith(("Get", "List", "Describe")), "eventType": "AwsApiCall",
           "managementEvent": True, "recipientAccountId": ACCOUNT, "eventCategory": "Management",
           "tlsDetails": {"tlsVersion": "TLSv1.3", "cipherSuite": "TLS_AES_128_GCM_SHA256",
                          "clientProvidedHostHeader": f"{source.split('.')[0]}.{region}.amazonaws.com"}}
    if error:
        rec |= {"errorCode": error, "errorMessage": "You are not authorized to perform this operation."}
    if extra:
        rec["additionalEventData"] = extra
    return json.dumps(rec | top)


def hits(rules, lines: list[str], rule_id: str) -> list[tuple[str, list[int]]]:
    signals = Detector(rules).scan(parsed(lines, "cloudtrail", "trail.json"))
    return [(s.level, s.line_numbers) for s in by_rule(signals, rule_id)]


def fired(rules, lines: list[str]) -> dict[str, str]:
    return {s.rule_id: s.level for s in Detector(rules).scan(parsed(lines, "cloudtrail", "trail.json"))}


# --- stolen instance-profile credentials ----------------------------------------------------------


def _instance_call(name: str, source: str, second: int, ip: str, **kw) -> str:
    return record(name, source, kw.pop("params", None), identity=kw.pop("identity", instance_role()), second=second,
                  ip=ip, agent=kw.pop("agent", BOTO), **kw)


def test_instance_credentials_used_from_a_second_public_address(rules):
    own = [_instance_call("UpdateInstanceInformation", "ssm.amazonaws.com", 0, "54.210.17.44"),
           _instance_call("DescribeInstances", "ec2.amazonaws.com", 300, "54.210.17.44")]
    stolen = [_instance_call("GetCallerIdentity", "sts.amazonaws.com", 2400, "185.220.101.7",
                             agent="aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/macos#23.4.0 md/arch#arm64"),
              _instance_call("DescribeInstances", "ec2.amazonaws.com", 2410, "185.220.101.7"),
              _instance_call("ListBuckets", "s3.amazonaws.com", 2420, "185.220.101.7")]
    # GetCallerIdentity is left out (others run it presigned); the calls after it give the thief away
    assert hits(rules, own + stolen, "lw-aws-instance-credentials-elsewhere") == [("high", [1, 2, 4, 5])]
    # flaws.cloud style: only the thieves' addresses show up, two of them
    thieves = [_instance_call("ListBuckets", "s3.amazonaws.com", 0, "203.0.113.80"),
               _instance_call("ListBuckets", "s3.amazonaws.com", 900, "198.51.100.201")]
    assert hits(rules, thieves, "lw-aws-instance-credentials-elsewhere") == [("high", [1, 2])]


def test_instance_credentials_from_the_instance_itself_are_quiet(rules):
    vpce = {"vpcEndpointId": "vpce-0f1e2d3c4b5a69788"}
    routine = [_instance_call("UpdateInstanceInformation", "ssm.amazonaws.com", 0, "54.210.17.44"),
               # the same instance through VPC endpoints (private address, vpcEndpointId) and an S3 gateway endpoint
               _instance_call("GetSecretValue", "secretsmanager.amazonaws.com", 60, "10.0.2.15",
                              params={"secretId": "prod/web/db"}, **vpce),
               _instance_call("GetParameter", "ssm.amazonaws.com", 70, "10.0.2.15", params={"name": "/web/url"}, **vpce),
               # the service acting with the instance's role (KMS for an EBS volume)
               _instance_call("Decrypt", "kms.amazonaws.com", 80, "ec2.amazonaws.com",
                              identity=instance_role() | {"invokedBy": "ec2.amazonaws.com"}, agent="ec2.amazonaws.com"),
               _instance_call("DescribeTags", "ec2.amazonaws.com", 600, "54.210.17.44"),
               # another instance of the same role, from its own address: another session
               _instance_call("DescribeTags", "ec2.amazonaws.com", 700, "3.91.200.12",
                              identity=instance_role("i-0ffeeddccbbaa9988"))]
    assert fired(rules, routine) == {}
    # a call through an interface endpoint counts as the instance's own whatever address it shows
    via_endpoint = _instance_call("GetParameter", "ssm.amazonaws.com", 900, "2600:1f18:4a3:6901:0:0:0:12",
                                  params={"name": "/web/url"}, **vpce)
    assert fired(rules, routine + [via_endpoint]) == {}
    # the application on the instance hands out presigned URLs: S3 logs the downloads under the
    # instance's session, from each user's address and browser
    presigned = [_object("GetObject", f"invoices/{n}.pdf", 1000 + n, ip=ip, bucket="shop-invoices",
                         identity=instance_role(), agent=BROWSER, extra={"AuthenticationMethod": "QueryString"})
                 for n, ip in enumerate(["81.2.69.160", "92.40.11.3", "176.24.5.90"])]
    # EKS (aws-iam-authenticator) and Vault's AWS login run the instance's presigned GetCallerIdentity
    verified = _instance_call("GetCallerIdentity", "sts.amazonaws.com", 1100, "52.4.180.33", agent="Go-http-client/1.1")
    assert fired(rules, routine + presigned + [verified]) == {}
    # a role session that is not an instance's (a CI job's) may move between runners
    ci = [record("GetCallerIdentity", "sts.amazonaws.com", identity=assumed_role("deploy", "gha-run-8812"), ip=ip,
                 second=i) for i, ip in enumerate(["20.57.3.9", "4.175.22.81"])]
    assert fired(rules, ci) == {}


def test_console_opened_with_instance_credentials(rules):
    token = record("GetSigninToken", "signin.amazonaws.com", None, identity=instance_role(), ip="185.220.101.7",
                   agent="python-requests/2.31.0", response={"GetSigninToken": "Success"}, eventType="AwsConsoleSignIn")
    assert hits(rules, [token], "lw-aws-instance-credentials-console") == [("high", [1])]
    assert hits(rules, [token], "lw-aws-federated-console-token") == [("medium", [1])]
    login = record("ConsoleLogin", "signin.amazonaws.com", None, identity=instance_role(), ip="185.220.101.7",
                   agent=BROWSER, response={"ConsoleLogin": "Success"}, eventType="AwsConsoleSignIn",
                   extra={"MobileVersion": "No", "MFAUsed": "No"})
    assert hits(rules, [login], "lw-aws-instance-credentials-console") == [("high", [1])]


def test_console_token_from_identity_center_is_quiet(rules):
    portal = record("GetSigninToken", "signin.amazonaws.com", None, identity=sso_role(), ip="198.51.100.10",
                    agent="Jersey/${project.version} (HttpUrlConnection 17.0.10)", response={"GetSigninToken": "Success"},
                    eventType="AwsConsoleSignIn")
    login = record("ConsoleLogin", "signin.amazonaws.com", None, identity=sso_role(), ip="198.51.100.10",
                   agent=BROWSER, response={"ConsoleLogin": "Success"}, eventType="AwsConsoleSignIn",
                   extra={"MobileVersion": "No", "MFAUsed": "No"})
    assert fired(rules, [portal, login]) == {}


def test_console_login_without_mfa_is_low_and_only_for_iam_users(rules):
    def login(identity: dict, mfa: str) -> str:
        return record("ConsoleLogin", "signin.amazonaws.com", None, identity=identity, agent=BROWSER,
                      response={"ConsoleLogin": "Success"}, eventType="AwsConsoleSignIn",
                      extra={"LoginTo": "https://console.aws.amazon.com/console/home", "MobileVersion": "No",
                             "MFAUsed": mfa})
    assert hits(rules, [login(iam_user("carol"), "No")], "lw-aws-console-login-no-mfa") == [("low", [1])]
    assert fired(rules, [login(iam_user("carol"), "Yes")]) == {}
    federated = assumed_role("okta-admins", "carol@example.com")
    assert fired(rules, [login(federated, "No")]) == {}


# --- tooling ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, source, agent", [
    ("ListUsers", "iam.amazonaws.com",
     "Scout Suite/5.14.0 Python/3.11.4 Darwin/23.1.0 Botocore/1.31.62 Scout Suite/5.14.0 (https://github.com/nccgroup/ScoutSuite)"),
    ("GetCallerIdentity", "sts.amazonaws.com", "TruffleHog"),
    ("GetPasswordData", "ec2.amazonaws.com", "stratus-red-team_527a0ec4-4ea6-42df-b410-e840b8dbb6c9"),
])
def test_offensive_tool_user_agents(rules, name, source, agent):
    assert hits(rules, [record(name, source, agent=agent)], "lw-aws-offensive-tool-user-agent") == [("medium", [1])]


@pytest.mark.parametrize("agent", [
    # Stratus' Terraform warm-up builds the target; it is not the technique
    "APN/1.0 HashiCorp/1.0 Terraform/1.1.2 (+https://www.terraform.io) terraform-provider-aws/3.76.1 "
    "(+https://registry.terraform.io/providers/hashicorp/aws) aws-sdk-go/1.44.157 (go1.19.3; darwin; arm64) "
    "stratus-red-team_83c9a458-ffab-4d43-8b02-9691311e8c0a HashiCorp-terraform-exec/0.17.3",
    CLI.format("describeinstances"), BOTO, "AWS Internal",
])
def test_ordinary_user_agents_are_not_tools(rules, agent):
    assert fired(rules, [record("DescribeInstances", "ec2.amazonaws.com", agent=agent)]) == {}


@pytest.mark.parametrize("agent", [
    "aws-cli/1.22.34 Python/3.9.12 Linux/5.16.0-kali7-amd64 botocore/1.24.19",
    "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/linux#6.6.9-amd64 md/arch#x86_64 lang/python#3.11.8 md/pyimpl#CPython "
    "cfg/retry-mode#standard md/installer#exe md/distrib#kali.2024 md/prompt#off md/command#sts.get-caller-identity",
    "aws-cli/2.4.5 Python/3.8.8 Linux/5.14.0-kali4-amd64 exe/x86_64.kali.2021 prompt/off command/sts.get-caller-identity",
    "Boto3/1.26.90 Python/3.11.2 Linux/6.1.0-1parrot1-amd64 Botocore/1.29.90",
])
def test_pentest_distribution_user_agents(rules, agent):
    assert hits(rules, [record("GetCallerIdentity", "sts.amazonaws.com", agent=agent)],
                "lw-aws-pentest-distro-user-agent") == [("medium", [1])]


def test_ubuntu_and_amazon_linux_user_agents_are_not_pentest_distros(rules):
    agents = [CLI.format("s3.ls"), BOTO, "aws-cli/2.13.0 Python/3.11.4 Linux/6.1.61-85.141.amzn2023.x86_64 exe/x86_64.amzn.2023",
              "aws-sdk-go-v2/1.24.1 os/linux lang/go#1.21.6 md/GOOS#linux md/GOARCH#amd64 api/sts#1.26.7 Kalimba/1.0"]
    assert fired(rules, [record("GetCallerIdentity", "sts.amazonaws.com", agent=a, second=i)
                         for i, a in enumerate(agents)]) == {}


# --- discovery sweep --------------------------------------------------------------------------------

SWEEP = [("GetCallerIdentity", "sts"), ("ListUsers", "iam"), ("ListRoles", "iam"), ("ListGroups", "iam"),
         ("ListPolicies", "iam"), ("GetAccountAuthorizationDetails", "iam"), ("GetAccountSummary", "iam"),
         ("ListAccessKeys", "iam"), ("ListBuckets", "s3"), ("DescribeInstances", "ec2"), ("DescribeSnapshots", "ec2"),
         ("DescribeVpcs", "ec2"), ("DescribeSecurityGroups", "ec2"), ("ListFunctions20150331", "lambda"),
         ("DescribeDBInstances", "rds"), ("ListSecrets", "secretsmanager"), ("DescribeParameters", "ssm"),
         ("DescribeTrails", "cloudtrail"), ("ListDetectors", "guardduty"), ("DescribeLogGroups", "logs"),
         ("ListKeys", "kms"), ("ListClusters", "eks")]


def _sweep(**kw) -> list[str]:
    return [record(n, f"{s}.amazonaws.com", second=10 * i, **kw) for i, (n, s) in enumerate(SWEEP)]


def test_many_distinct_read_calls_by_one_identity_is_a_low_discovery_sweep(rules):
    lines = _sweep(identity=iam_user("ci-deployer"), ip="203.0.113.80", agent=BOTO)
    assert hits(rules, lines, "lw-aws-api-discovery-burst") == [("low", list(range(1, 21)) + [21, 22])]
    # from an instance (Stratus' ec2-enumerate-from-instance, but broader)
    assert hits(rules, _sweep(identity=instance_role(), ip="54.210.17.44", agent=BOTO),
                "lw-aws-api-discovery-burst")[0][0] == "low"


def test_console_service_and_infrastructure_as_code_reads_are_not_a_sweep(rules):
    console_agent = _sweep(identity=iam_user("alice"), agent="AWS Internal")
    console_session = _sweep(identity=assumed_role("Admin", "alice"), agent=BROWSER, sessionCredentialFromConsole="true")
    terraform = _sweep(identity=assumed_role("terraform", "plan-4411"),
                       agent="APN/1.0 HashiCorp/1.0 Terraform/1.7.4 (+https://www.terraform.io) terraform-provider-aws/5.40.0")
    config = _sweep(identity=assumed_role("AWSServiceRoleForConfig", "AWSConfig-Describe") | {"invokedBy": "config.amazonaws.com"},
                    ip="config.amazonaws.com", agent="config.amazonaws.com")
    app = [record(n, "ec2.amazonaws.com", identity=instance_role(), ip="54.210.17.44", agent=BOTO, second=i)
           for i, n in enumerate(["DescribeTags", "DescribeInstances", "GetParameter"] * 10)]
    for lines in (console_agent, console_session, terraform, config, app):
        assert hits(rules, lines, "lw-aws-api-discovery-burst") == []


# --- IAM privilege escalation -----------------------------------------------------------------------


def _policy(*statements: dict) -> str:
    """A policy document as CloudTrail records it: the JSON text the caller sent."""
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)}, indent=4)


ALLOW_ALL = {"Effect": "Allow", "Action": "*", "Resource": "*"}


@pytest.mark.parametrize("name, params", [
    ("PutUserPolicy", {"userName": "dev-jenkins", "policyName": "ops", "policyDocument": _policy(ALLOW_ALL)}),
    ("PutRolePolicy", {"roleName": "lambda-exec", "policyName": "x",
                       "policyDocument": _policy({"Sid": "a", "Resource": ["*"], "Action": ["iam:*"], "Effect": "Allow"})}),
    ("CreatePolicyVersion", {"policyArn": f"arn:aws:iam::{ACCOUNT}:policy/ci-deploy", "setAsDefault": True,
                             "policyDocument": _policy({"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "*"},
                                                       ALLOW_ALL)}),
])
def test_policy_that_allows_everything(rules, name, params):
    assert hits(rules, [record(name, "iam.amazonaws.com", params)], "lw-aws-iam-policy-allows-everything") == [("high", [1])]


@pytest.mark.parametrize("name, params", [
    # Terraform publishing a new version of an ordinary policy
    ("CreatePolicyVersion", {"policyArn": f"arn:aws:iam::{ACCOUNT}:policy/app-read", "setAsDefault": True,
                             "policyDocument": _policy({"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"],
                                                        "Resource": ["arn:aws:s3:::app-data", "arn:aws:s3:::app-data/*"]})}),
    # a stored (not default) version grants nothing
    ("CreatePolicyVersion", {"policyArn": f"arn:aws:iam::{ACCOUNT}:policy/app-read", "setAsDefault": False,
                             "policyDocument": _policy(ALLOW_ALL)}),
    # the quarantine policy incident responders attach: deny everything
    ("PutUserPolicy", {"userName": "leaked-user", "policyName": "quarantine",
                       "policyDocument": _policy({"Effect": "Deny", "Action": "*", "Resource": "*"})}),
    # every action, but on one bucket only
    ("PutRolePolicy", {"roleName": "backup", "policyName": "bucket",
                       "policyDocument": _policy({"Effect": "Allow", "Action": "*", "Resource": "arn:aws:s3:::backups/*"})}),
])
def test_ordinary_policy_changes_are_quiet(rules, name, params):
    assert fired(rules, [record(name, "iam.amazonaws.com", params)]) == {}


def test_policy_version_rollback_is_medium(rules):
    rollback = record("SetDefaultPolicyVersion", "iam.amazonaws.com",
                      {"policyArn": f"arn:aws:iam::{ACCOUNT}:policy/ci-deploy", "versionId": "v2"})
    assert hits(rules, [rollback], "lw-aws-iam-policy-version-rollback") == [("medium", [1])]
    denied = record("SetDefaultPolicyVersion", "iam.amazonaws.com",
                    {"policyArn": f"arn:aws:iam::{ACCOUNT}:policy/ci-deploy", "versionId": "v2"}, error="AccessDenied")
    assert hits(rules, [denied], "lw-aws-iam-policy-version-rollback") == []


def test_user_added_to_admins_or_to_any_group_by_themselves(rules):
    to_admins = record("AddUserToGroup", "iam.amazonaws.com", {"groupName": "Administrators", "userName": "svc-backup"},
                       identity=iam_user("dev-jenkins"))
    themselves = record("AddUserToGroup", "iam.amazonaws.com", {"groupName": "data-engineers", "userName": "dev-jenkins"},
                        identity=iam_user("dev-jenkins"))
    assert hits(rules, [to_admins], "lw-aws-user-added-to-admin-group") == [("high", [1])]
    assert hits(rules, [themselves], "lw-aws-user-added-to-admin-group") == [("high", [1])]
    onboarding = record("AddUserToGroup", "iam.amazonaws.com", {"groupName": "developers", "userName": "bob"},
                        identity=iam_user("alice"))
    assert fired(rules, [onboarding]) == {}


def test_identity_federation_trust_added(rules):
    saml = record("CreateSAMLProvider", "iam.amazonaws.com",
                  {"sAMLMetadataDocument": "<EntityDescriptor ...>", "name": "corp-idp"},
                  response={"sAMLProviderArn": f"arn:aws:iam::{ACCOUNT}:saml-provider/corp-idp"})
    anchor = record("CreateTrustAnchor", "rolesanywhere.amazonaws.com",
                    {"enabled": True, "name": "ca", "source": {"sourceType": "CERTIFICATE_BUNDLE",
                                                               "sourceData": {"x509CertificateData": "-----BEGIN..."}}})
    assert hits(rules, [saml], "lw-aws-federation-trust-added") == [("medium", [1])]
    assert hits(rules, [anchor], "lw-aws-federation-trust-added") == [("medium", [1])]
    assert fired(rules, [record("ListSAMLProviders", "iam.amazonaws.com"),
                         record("ListTrustAnchors", "rolesanywhere.amazonaws.com", second=1)]) == {}


def test_federation_token_but_not_session_token(rules):
    federation = record("GetFederationToken", "sts.amazonaws.com",
                        {"name": "stratus_red_team", "policy": json.dumps({"Statement": [ALLOW_ALL]}),
                         "durationSeconds": 129600}, identity=iam_user("dev-jenkins"))
    assert hits(rules, [federation], "lw-aws-federation-token") == [("medium", [1])]
    mfa = record("GetSessionToken", "sts.amazonaws.com", {"durationSeconds": 43200,
                                                          "serialNumber": f"arn:aws:iam::{ACCOUNT}:mfa/alice"},
                 identity=iam_user("alice"))
    assert fired(rules, [mfa]) == {}


# --- defence evasion ----------------------------------------------------------------------------------


def _s3(name: str, params: dict, **kw) -> str:
    return record(name, "s3.amazonaws.com", {"Host": f"{params.get('bucketName', 'b')}.s3.amazonaws.com"} | params, **kw)


def test_bucket_versioning_suspended(rules):
    suspend = _s3("PutBucketVersioning", {"bucketName": "corp-backups", "versioning": "", "VersioningConfiguration": {
        "Status": "Suspended", "xmlns": "http://s3.amazonaws.com/doc/2006-03-01/"}})
    assert hits(rules, [suspend], "lw-aws-s3-versioning-suspended") == [("medium", [1])]
    enable = _s3("PutBucketVersioning", {"bucketName": "corp-backups", "versioning": "", "VersioningConfiguration": {
        "Status": "Enabled", "xmlns": "http://s3.amazonaws.com/doc/2006-03-01/"}})
    assert fired(rules, [enable]) == {}


@pytest.mark.parametrize("group", ["aws-cloudtrail-logs-111122223333-1a2b3c4d", "/aws/vpc/flowlogs", "/aws/route53/dns-query"])
def test_security_log_group_deleted(rules, group):
    line = record("DeleteLogGroup", "logs.amazonaws.com", {"logGroupName": group})
    assert hits(rules, [line], "lw-aws-security-log-group-deleted") == [("high", [1])]


def test_application_log_group_deleted_is_quiet(rules):
    assert fired(rules, [record("DeleteLogGroup", "logs.amazonaws.com", {"logGroupName": "/aws/lambda/thumbnailer"})]) == {}


@pytest.mark.parametrize("name, source, params", [
    ("Disable", "inspector2.amazonaws.com", {"resourceTypes": ["EC2", "ECR", "LAMBDA"], "accountIds": [ACCOUNT]}),
    ("DisableMacie", "macie2.amazonaws.com", {}),
    ("DeleteAnalyzer", "access-analyzer.amazonaws.com", {"analyzerName": "ConsoleAnalyzer-0a1b"}),
    ("DisassociateFromAdministratorAccount", "guardduty.amazonaws.com", {"detectorId": "12abc34d567e8fa901bc2d34e56789f0"}),
    ("BatchDisableStandards", "securityhub.amazonaws.com", {"StandardsSubscriptionArns": [
        f"arn:aws:securityhub:us-east-1:{ACCOUNT}:subscription/aws-foundational-security-best-practices/v/1.0.0"]}),
    ("DeleteModelInvocationLoggingConfiguration", "bedrock.amazonaws.com", None),
])
def test_security_service_disabled(rules, name, source, params):
    assert hits(rules, [record(name, source, params)], "lw-aws-security-service-disabled") == [("high", [1])]


def test_security_service_reads_and_enables_are_quiet(rules):
    lines = [record("Enable", "inspector2.amazonaws.com", {"resourceTypes": ["EC2"]}),
             record("ListMembers", "guardduty.amazonaws.com", {"detectorId": "12abc"}, second=1),
             record("BatchEnableStandards", "securityhub.amazonaws.com", {"StandardsSubscriptionRequests": []}, second=2),
             record("DisableMacie", "macie2.amazonaws.com", {}, second=3, error="AccessDeniedException")]
    assert {k: v for k, v in fired(rules, lines).items() if k != "lw-aws-access-denied-burst"} == {}


def test_findings_auto_archived(rules):
    archive = record("CreateFilter", "guardduty.amazonaws.com", {
        "detectorId": "12abc34d567e8fa901bc2d34e56789f0", "name": "tuning", "action": "ARCHIVE", "rank": 1,
        "findingCriteria": {"criterion": {"service.action.awsApiCallAction.remoteIpDetails.ipAddressV4": {
            "eq": ["185.220.101.7"]}}}})
    automation = record("CreateAutomationRule", "securityhub.amazonaws.com", {
        "RuleName": "mute", "RuleOrder": 1, "Criteria": {"ProductName": [{"Value": "GuardDuty", "Comparison": "EQUALS"}]},
        "Actions": [{"Type": "FINDING_FIELDS_UPDATE", "FindingFieldsUpdate": {"Workflow": {"Status": "SUPPRESSED"}}}]})
    assert hits(rules, [archive], "lw-aws-findings-auto-suppressed") == [("medium", [1])]
    assert hits(rules, [automation], "lw-aws-findings-auto-suppressed") == [("medium", [1])]
    saved_filter = record("CreateFilter", "guardduty.amazonaws.com", {"detectorId": "12abc", "name": "view", "action": "NOOP",
                                                                      "findingCriteria": {}})
    assert fired(rules, [saved_filter]) == {}


# --- execution and lateral movement on instances ------------------------------------------------------


def _send_command(instances: list[str], document: str = "AWS-RunShellScript", **kw) -> str:
    return record("SendCommand", "ssm.amazonaws.com", {
        "instanceIds": instances, "documentName": document, "parameters": "HIDDEN_DUE_TO_SECURITY_REASONS",
        "interactive": False}, response={"command": {"commandId": "5c2b1e0a-7d41-4f0e-9a55-1c2d3e4f5a6b",
                                                     "documentName": document, "status": "Pending"}}, **kw)


def test_ssm_shell_command_low_and_fanned_out_medium(rules):
    one = _send_command(["i-0a1b2c3d4e5f60718"])
    assert fired(rules, [one]) == {"lw-aws-ssm-shell-command": "low"}
    fanout = _send_command(["i-0a1b2c3d4e5f60718", "i-0ffeeddccbbaa9988", "i-01234567890abcdef"])
    assert hits(rules, [fanout], "lw-aws-ssm-shell-command-fanout") == [("medium", [1])]


def test_ssm_patching_and_state_manager_are_quiet(rules):
    patch = record("SendCommand", "ssm.amazonaws.com", {
        "targets": [{"key": "tag:PatchGroup", "values": ["web"]}], "documentName": "AWS-RunPatchBaseline",
        "parameters": "HIDDEN_DUE_TO_SECURITY_REASONS", "interactive": False})
    association = _send_command(["i-0a1b2c3d4e5f60718", "i-0ffeeddccbbaa9988", "i-01234567890abcdef"],
                                identity=assumed_role("AWSServiceRoleForAmazonSSM", "ssm-association")
                                | {"invokedBy": "ssm.amazonaws.com"}, ip="ssm.amazonaws.com", agent="ssm.amazonaws.com")
    assert fired(rules, [patch, association]) == {}


def _start_session(instance: str, second: int) -> str:
    return record("StartSession", "ssm.amazonaws.com", {"target": instance}, second=second,
                  response={"sessionId": f"dev-jenkins-0{second:03d}abc", "tokenValue": "Value hidden due to security reasons.",
                            "streamUrl": f"wss://ssmmessages.us-east-1.amazonaws.com/v1/data-channel/dev-jenkins-0{second:03d}abc"})


def test_session_manager_hops_over_three_instances(rules):
    hops = [_start_session(i, n * 20) for n, i in enumerate(["i-0a1b2c3d4e5f60718", "i-0ffeeddccbbaa9988", "i-01234567890abcdef"])]
    assert hits(rules, hops, "lw-aws-ssm-sessions-burst") == [("low", [1, 2, 3])]
    same_host = [_start_session("i-0a1b2c3d4e5f60718", n * 60) for n in range(4)]
    assert fired(rules, same_host) == {}


def _push_key(instance: str, second: int) -> str:
    return record("SendSSHPublicKey", "ec2-instance-connect.amazonaws.com", {
        "instanceId": instance, "instanceOSUser": "ec2-user",
        "sSHPublicKey": f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{second:04d}stratus"}, second=second,
        response={"requestId": "a9b8c7d6-e5f4-4a3b-9c2d-1e0f9a8b7c6d", "success": True})


def test_instance_connect_keys_pushed_to_three_instances(rules):
    pushes = [_push_key(i, n) for n, i in enumerate(["i-0a1b2c3d4e5f60718", "i-0ffeeddccbbaa9988", "i-01234567890abcdef"])]
    assert hits(rules, pushes, "lw-aws-instance-connect-burst") == [("medium", [1, 2, 3])]
    # the console's "Connect" button, three times on one server (each push a new key)
    assert fired(rules, [_push_key("i-0a1b2c3d4e5f60718", n * 120) for n in range(3)]) == {}


def test_serial_console_enabled_and_used(rules):
    enable = record("EnableSerialConsoleAccess", "ec2.amazonaws.com", {"EnableSerialConsoleAccessRequest": ""},
                    response={"EnableSerialConsoleAccessResponse": {"serialConsoleAccessEnabled": True}})
    push = record("SendSerialConsoleSSHPublicKey", "ec2-instance-connect.amazonaws.com", {
        "instanceId": "i-0a1b2c3d4e5f60718", "serialPort": 0, "sSHPublicKey": "ssh-ed25519 AAAAC3Nza"}, second=5)
    assert hits(rules, [enable, push], "lw-aws-ec2-serial-console") == [("medium", [1, 2])]  # one caller: one signal
    assert fired(rules, [record("GetSerialConsoleAccessStatus", "ec2.amazonaws.com", {})]) == {}


def test_lambda_code_replaced_low_unless_cloudformation_did_it(rules):
    update = record("UpdateFunctionCode20150331v2", "lambda.amazonaws.com",
                    {"functionName": "billing-export", "publish": False, "dryRun": False})
    assert hits(rules, [update], "lw-aws-lambda-code-replaced") == [("low", [1])]
    stack = record("UpdateFunctionCode20150331v2", "lambda.amazonaws.com",
                   {"functionName": "billing-export", "s3Bucket": "cfn-artifacts", "s3Key": "billing/abc.zip"},
                   identity=assumed_role("cfn-deploy", "AWSCloudFormation") | {"invokedBy": "cloudformation.amazonaws.com"},
                   ip="cloudformation.amazonaws.com", agent="cloudformation.amazonaws.com")
    assert fired(rules, [stack]) == {}


# --- credentials and data ---------------------------------------------------------------------------


def test_secrets_read_with_one_batch_call(rules):
    batch = record("BatchGetSecretValue", "secretsmanager.amazonaws.com",
                   {"filters": [{"key": "tag-key", "values": ["StratusRedTeam"]}]})
    assert hits(rules, [batch], "lw-aws-secrets-batch-read") == [("medium", [1])]
    assert fired(rules, [record("ListSecrets", "secretsmanager.amazonaws.com", {"maxResults": 100})]) == {}


def _rds(name: str, params: dict, second: int = 0, **kw) -> str:
    return record(name, "rds.amazonaws.com", params, second=second, **kw)


def test_rds_restored_public_then_password_reset(rules):
    restore = _rds("RestoreDBInstanceFromDBSnapshot", {"dBInstanceIdentifier": "prod-copy",
                                                      "dBSnapshotIdentifier": "rds:prod-2025-04-01-03-10",
                                                      "publiclyAccessible": True, "dBInstanceClass": "db.t3.medium"})
    reset = _rds("ModifyDBInstance", {"dBInstanceIdentifier": "prod-copy", "masterUserPassword": "****",
                                      "applyImmediately": True}, second=900)
    assert hits(rules, [restore], "lw-aws-rds-made-public") == [("medium", [1])]
    assert hits(rules, [reset], "lw-aws-rds-master-password-reset") == [("low", [1])]
    assert hits(rules, [restore, reset], "lw-aws-rds-restore-then-password-reset") == [("high", [1, 2])]


def test_rds_routine_changes_are_quiet_or_low(rules):
    resize = _rds("ModifyDBInstance", {"dBInstanceIdentifier": "prod", "allocatedStorage": 500, "applyImmediately": False})
    private_restore = _rds("RestoreDBInstanceToPointInTime", {"targetDBInstanceIdentifier": "prod-pitr",
                                                              "sourceDBInstanceIdentifier": "prod",
                                                              "publiclyAccessible": False}, second=10)
    assert fired(rules, [resize, private_restore]) == {}
    # a password reset long after a restore is the rotation it looks like
    late = _rds("ModifyDBInstance", {"dBInstanceIdentifier": "prod-pitr", "masterUserPassword": "****"}, second=7200)
    assert fired(rules, [private_restore, late]) == {"lw-aws-rds-master-password-reset": "low"}


def _object(name: str, key: str, second: int, ip: str = "203.0.113.80", bucket: str = "corp-finance", **kw) -> str:
    extra = {"SignatureVersion": "SigV4", "CipherSuite": "TLS_AES_128_GCM_SHA256", "bytesTransferredIn": 0,
             "AuthenticationMethod": "AuthHeader", "x-amz-id-2": "Zm9vYmFy", "bytesTransferredOut": 0} | kw.pop("extra", {})
    params = {"bucketName": bucket, "Host": f"{bucket}.s3.us-east-1.amazonaws.com"} | ({"key": key} if key else {})
    return record(name, "s3.amazonaws.com", params | kw.pop("params", {}),
                  second=second, ip=ip, agent=kw.pop("agent", "rclone/v1.65.2"), extra=extra, eventCategory="Data", managementEvent=False,
                  resources=[{"type": "AWS::S3::Object", "ARN": f"arn:aws:s3:::{bucket}/{key}"} if key else
                             {"type": "AWS::S3::Object", "ARNPrefix": f"arn:aws:s3:::{bucket}/"}], **kw)


def test_objects_deleted_one_by_one_and_after_download(rules):
    deletes = [_object("DeleteObject", f"reports/2024/q{i}.pdf", 600 + i) for i in range(25)]
    assert hits(rules, deletes, "lw-aws-s3-bulk-delete") == [("medium", list(range(1, 26)))]
    downloads = [_object("GetObject", f"reports/2024/q{i}.pdf", i) for i in range(25)]
    lines = downloads + deletes
    # fires when the twentieth delete completes the sequence; the bulk-delete signal goes on to line 50
    assert hits(rules, lines, "lw-aws-s3-download-then-delete") == [("high", list(range(1, 46)))]
    # the two halves still report on their own
    assert {k: v for k, v in fired(rules, lines).items()} == {
        "lw-aws-s3-bulk-download": "medium", "lw-aws-s3-bulk-delete": "medium", "lw-aws-s3-download-then-delete": "high"}


def test_a_few_deletes_are_quiet(rules):
    assert fired(rules, [_object("DeleteObject", f"tmp/upload-{i}.part", i) for i in range(5)]) == {}


def test_objects_rewritten_with_customer_keys(rules):
    sse_c = {"x-amz-server-side-encryption-customer-algorithm": "AES256"}
    rewrites = [_object("CopyObject", f"db/dump-{i}.sql.gz", i, params=sse_c | {"x-amz-copy-source": f"corp-finance/db/dump-{i}.sql.gz"},
                        extra={"SSEApplied": "SSE_C"}) for i in range(12)]
    assert hits(rules, rewrites, "lw-aws-s3-sse-c-rewrite") == [("high", list(range(1, 13)))]
    kms = [_object("PutObject", f"db/dump-{i}.sql.gz", i, params={"x-amz-server-side-encryption": "aws:kms"},
                   extra={"SSEApplied": "SSE_KMS"}) for i in range(15)]
    assert fired(rules, kms) == {}


# --- compute abuse -------------------------------------------------------------------------------------


def _run(instance_type: str, region: str = "us-east-1", second: int = 0, **kw) -> str:
    return record("RunInstances", "ec2.amazonaws.com", {
        "instancesSet": {"items": [{"imageId": "ami-0c7217cdde317cfec", "minCount": 1, "maxCount": 10}]},
        "instanceType": instance_type, "blockDeviceMapping": {}, "monitoring": {"enabled": False},
        "disableApiTermination": False, "disableApiStop": False, "clientToken": "a1b2"}, region=region, second=second, **kw)


def test_gpu_instances_low_and_many_regions_medium(rules):
    assert hits(rules, [_run("p3.16xlarge", error="Client.UnauthorizedOperation")],
                "lw-aws-gpu-instances-requested") == [("low", [1])]
    spread = [_run("c5.4xlarge", r, n * 60) for n, r in enumerate(["us-east-1", "eu-west-1", "ap-southeast-1"])]
    assert hits(rules, spread, "lw-aws-instances-many-regions") == [("medium", [1, 2, 3])]


def test_ordinary_launches_are_quiet(rules):
    lines = [_run("t3.micro", second=n) for n in range(3)]
    lines.append(_run("m5.large", "eu-west-1", 10, identity=assumed_role("AWSServiceRoleForAutoScaling", "AutoScaling")
                      | {"invokedBy": "autoscaling.amazonaws.com"}, ip="autoscaling.amazonaws.com",
                      agent="autoscaling.amazonaws.com"))
    lines.append(_run("m5.large", "ap-southeast-1", 20, identity=assumed_role("AWSServiceRoleForAutoScaling", "AutoScaling")
                      | {"invokedBy": "autoscaling.amazonaws.com"}, ip="autoscaling.amazonaws.com",
                      agent="autoscaling.amazonaws.com"))
    assert fired(rules, lines) == {}


def test_opt_in_region_enabled(rules):
    enable = record("EnableRegion", "account.amazonaws.com", {"RegionName": "ap-east-1"})
    assert hits(rules, [enable], "lw-aws-region-enabled") == [("low", [1])]
    assert fired(rules, [record("ListRegions", "account.amazonaws.com", {})]) == {}


def test_aws_services_reading_or_deleting_for_the_caller_are_not_bulk_access(rules):
    """Athena reads a table's objects (and S3 replication or a service clean-up deletes them) with the
    caller's identity, invokedBy the service and the service's name in sourceIPAddress: one "address"
    for every customer of the service, not a client pulling the bucket."""
    def by_service(name: str, key: str, second: int) -> str:
        return _object(name, key, second, ip="athena.amazonaws.com", bucket="datalake",
                       identity=iam_user("analyst") | {"invokedBy": "athena.amazonaws.com"}, agent="athena.amazonaws.com")
    lines = [by_service("GetObject", f"events/dt=2025-04-01/part-{i:05d}.parquet", i) for i in range(30)]
    lines += [by_service("DeleteObject", f"results/tmp-{i:05d}.csv", 100 + i) for i in range(30)]
    assert fired(rules, lines) == {}


def test_bucket_downloaded_then_emptied_in_one_batch(rules):
    downloads = [_object("GetObject", f"exports/customers-{i}.sql", i) for i in range(25)]
    batch = _object("DeleteObjects", "", 200, params={"delete": "", "x-id": "DeleteObjects"})
    note = _object("PutObject", "FILES-DELETED.txt", 210)
    lines = downloads + [batch, note]
    assert hits(rules, lines, "lw-aws-s3-download-then-batch-delete") == [("high", list(range(1, 27)))]
    assert hits(rules, lines, "lw-aws-s3-batch-delete") == [("low", [26])]
    # `aws s3 rm --recursive` on its own: low
    assert fired(rules, [batch]) == {"lw-aws-s3-batch-delete": "low"}
