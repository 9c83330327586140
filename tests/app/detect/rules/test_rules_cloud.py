"""The shipped rules on CloudTrail, GCP, Entra ID, Azure activity and Key Vault, Kubernetes, Microsoft 365: each fires on an attack and stays quiet on a benign neighbour."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from _rule_events import (
    _entra,
    _gcp,
    _k8s,
    _trail,
    access,
    by_rule,
    fired,
    parsed,
)

from logwarden.app.detect import Detector
from logwarden.app.events import Event


def cloudtrail(record: dict, line_no: int = 1) -> Event:
    ident = record.get("userIdentity", {})
    user = "root" if ident.get("type") == "Root" else ident.get("userName") or ident.get("arn", "").split("/")[-1]
    fields = {k: record.get(k) for k in ("eventName", "eventSource", "eventType", "awsRegion", "sourceIPAddress",
                                         "userAgent", "errorCode", "errorMessage", "requestParameters",
                                         "responseElements", "additionalEventData") if k in record}
    fields |= {"src_ip": record["sourceIPAddress"], "userIdentity_type": ident.get("type"),
               "userIdentity_arn": ident.get("arn"), "user": user}
    ts = datetime.fromisoformat(record["eventTime"].replace("Z", "+00:00"))
    message = f"{record['eventSource']} {record['eventName']} {user} {record.get('errorCode') or ''}".strip()
    return Event(source="cloudtrail.json", line_no=line_no, offset=0, raw=json.dumps(record), format="cloudtrail",
                 ts=ts, message=message, fields=fields)


def ct(event_name: str, source: str = "iam.amazonaws.com", identity: dict | None = None, **extra) -> Event:
    record = {"eventVersion": "1.08", "eventTime": "2024-03-10T12:00:00Z", "eventSource": source,
              "eventName": event_name, "awsRegion": "us-east-1", "sourceIPAddress": "198.51.100.23",
              "userAgent": "aws-cli/2.15.0", "eventType": "AwsApiCall",
              "userIdentity": identity or {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice",
                                           "userName": "alice", "accountId": "123456789012"}} | extra
    return cloudtrail(record, line_no=4)


def test_console_login_failure_and_burst(rules):
    failure = ct("ConsoleLogin", source="signin.amazonaws.com", eventType="AwsConsoleSignIn",
                 errorMessage="Failed authentication", responseElements={"ConsoleLogin": "Failure"},
                 additionalEventData={"MFAUsed": "No"})
    success = ct("ConsoleLogin", source="signin.amazonaws.com", eventType="AwsConsoleSignIn",
                 responseElements={"ConsoleLogin": "Success"})
    assert fired(Detector(rules).scan([failure])) == {"lw-aws-console-login-failure"}
    assert Detector(rules).scan([success]) == []
    assert "lw-aws-console-login-bruteforce" in fired(Detector(rules).scan([failure] * 5))


def test_root_account_use_but_not_aws_service_events(detector):
    root = {"type": "Root", "arn": "arn:aws:iam::123456789012:root", "accountId": "123456789012"}
    used = ct("CreateUser", identity=root, requestParameters={"userName": "ops"})
    service = ct("AssumeRole", source="sts.amazonaws.com", identity=root, eventType="AwsServiceEvent")
    assert "lw-aws-root-account-usage" in fired(detector.scan([used]))
    assert detector.scan([service]) == []


@pytest.mark.parametrize("event_name", ["StopLogging", "DeleteTrail", "UpdateTrail"])
def test_cloudtrail_tampering(detector, event_name):
    event = ct(event_name, source="cloudtrail.amazonaws.com", requestParameters={"name": "org-trail"})
    assert [(s.rule_id, s.level) for s in detector.scan([event])] == [("lw-aws-cloudtrail-tampering", "high")]


def test_bucket_made_public_by_policy_or_acl_but_not_by_a_private_policy(detector):
    public_policy = {"bucketName": "corp-backups", "bucketPolicy": {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::corp-backups/*"}]}}
    private_policy = {"bucketName": "corp-logs", "bucketPolicy": {"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:role/logger"}, "Action": "s3:PutObject"}]}}
    public_acl = {"bucketName": "corp-web", "AccessControlPolicy": {"AccessControlList": {"Grant": [
        {"Grantee": {"xsi:type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"},
         "Permission": "READ"}]}}}
    s3 = "s3.amazonaws.com"
    assert fired(detector.scan([ct("PutBucketPolicy", source=s3, requestParameters=public_policy)])) == {
        "lw-aws-s3-bucket-made-public"}
    assert fired(detector.scan([ct("PutBucketAcl", source=s3, requestParameters=public_acl)])) == {
        "lw-aws-s3-bucket-made-public"}
    assert detector.scan([ct("PutBucketPolicy", source=s3, requestParameters=private_policy)]) == []
    denied = ct("PutBucketPolicy", source=s3, requestParameters=public_policy, errorCode="AccessDenied")
    assert detector.scan([denied]) == []
    deleted = ct("DeleteBucketPolicy", source=s3, requestParameters={"bucketName": "corp-backups"})
    assert [s.key for s in detector.scan([deleted])] == ["corp-backups"]


def test_access_key_for_another_user_but_not_for_oneself(detector):
    other = ct("CreateAccessKey", requestParameters={"userName": "bob"},
               responseElements={"accessKey": {"userName": "bob", "status": "Active"}})
    own = ct("CreateAccessKey", requestParameters={"userName": "alice"})
    assert [s.rule_id for s in detector.scan([other])] == ["lw-aws-access-key-for-other-user"]
    assert detector.scan([own]) == []


def test_administrator_access_attached_but_not_read_only(detector):
    admin = ct("AttachUserPolicy", requestParameters={
        "userName": "eve", "policyArn": "arn:aws:iam::aws:policy/AdministratorAccess"})
    read_only = ct("AttachUserPolicy", requestParameters={
        "userName": "eve", "policyArn": "arn:aws:iam::aws:policy/ReadOnlyAccess"})
    signals = detector.scan([admin])
    assert [(s.rule_id, s.level, s.key) for s in signals] == [("lw-aws-admin-policy-attached", "high", "eve")]
    assert detector.scan([read_only]) == []


@pytest.mark.parametrize("lines", [
    [_trail("ListUsers", second=i, error="AccessDenied") for i in range(12)],  # one action retried: not discovery
    [_trail("ModifySnapshotAttribute", {"snapshotId": "snap-0a1", "createVolumePermission": {"remove": {"items": [{"userId": "444455556666"}]}}})],
    [_trail("GetSecretValue", {"secretId": "prod/db"}, second=i, source="secretsmanager.amazonaws.com") for i in range(8)],
    [_trail("GetParameter", {"name": f"/prod/flag{i}", "withDecryption": False}, second=i, source="ssm.amazonaws.com") for i in range(6)],
    [_trail("UpdateLoginProfile", {"userName": "ci-bot"}, source="iam.amazonaws.com")],  # their own password
    [_trail("UpdateDetector", {"detectorId": "12abc", "enable": True}, source="guardduty.amazonaws.com")],
    [_trail("AuthorizeSecurityGroupIngress", {"groupId": "sg-1", "ipPermissions": {"items": [{"ipRanges": {"items": [{"cidrIp": "10.0.0.0/8"}]}}]}})],
    [_trail("GetPasswordData", {"instanceId": f"i-0{i}"}, second=i) for i in range(2)],  # one admin, two servers
    [_trail("ModifyInstanceAttribute", {"instanceId": "i-01", "instanceType": {"value": "t3.large"}})],
    [_trail("UpdateAssumeRolePolicy", {"roleName": "ops", "policyDocument": json.dumps(
        {"Statement": [{"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}, "Action": "sts:AssumeRole"}]})},
        source="iam.amazonaws.com")],
    [_trail("AddPermission20150331v2", {"functionName": "thumbs", "statementId": "s3", "action": "lambda:InvokeFunction",
                                        "principal": "s3.amazonaws.com"}, source="lambda.amazonaws.com")],
    [_trail("EnableKey", {"keyId": "k-1"}, source="kms.amazonaws.com")],
    [_trail("CreateResolverQueryLogConfig", {"name": "vpc-dns"}, source="route53resolver.amazonaws.com")],
    [_trail("PutBucketLifecycle", {"bucketName": "org-trail-logs", "LifecycleConfiguration": {"Rule": {
        "Expiration": {"Days": 365}, "Status": "Enabled"}}}, source="s3.amazonaws.com")],
])
def test_cloudtrail_benign_lookalikes_are_quiet(rules, lines):
    assert Detector(rules).scan(parsed(lines, "cloudtrail", "trail.json")) == []


@pytest.mark.parametrize("lines", [
    [_gcp("SetIamPolicy", serviceData={"policyDelta": {"bindingDeltas": [
        {"action": "REMOVE", "role": "roles/owner", "member": "user:old@acme.com"}]}})],
    [_gcp("SetIamPolicy", serviceData={"policyDelta": {"bindingDeltas": [
        {"action": "ADD", "role": "roles/viewer", "member": "user:new@acme.com"}]}})],
    [_gcp("v1.compute.firewalls.insert", "compute.googleapis.com", request={"sourceRanges": ["10.0.0.0/8"]})],
    [_entra(f"user{i}@contoso.com", i * 20, code="0") for i in range(12)],  # successful sign-ins
])
def test_gcp_and_entra_benign_lookalikes_are_quiet(rules, lines):
    assert Detector(rules).scan(parsed(lines, "json", "cloud.json")) == []


def test_aws_root_console_login_and_root_access_key(detector):
    root = {"type": "Root", "arn": "arn:aws:iam::123456789012:root", "accountId": "123456789012"}
    login = ct("ConsoleLogin", source="signin.amazonaws.com", identity=root, eventType="AwsConsoleSignIn",
               responseElements={"ConsoleLogin": "Success"}, additionalEventData={"MFAUsed": "No"})
    key = ct("CreateAccessKey", identity=root, responseElements={"accessKey": {"status": "Active"}})
    assert fired(detector.scan([login])) == {"lw-aws-root-console-login", "lw-aws-root-account-usage"}
    assert fired(detector.scan([key])) == {"lw-aws-root-access-key-created", "lw-aws-root-account-usage"}


def test_bulk_s3_downloads_count_distinct_objects(rules):
    def get(i: int, key: str) -> Event:
        return ct("GetObject", source="s3.amazonaws.com", eventType="AwsApiCall",
                  requestParameters={"bucketName": "corp-finance-reports", "key": key})
    many = [get(i, f"reports/2023/q{i % 4}/r{i}.pdf") for i in range(25)]
    same = [get(i, "reports/index.json") for i in range(25)]
    assert by_rule(Detector(rules).scan(many), "lw-aws-s3-bulk-download")[0].key == "198.51.100.23"
    assert Detector(rules).scan(same) == []


@pytest.mark.parametrize("request_line, status, size, rule_id", [
    ("GET /.env HTTP/1.1", 404, 0, "lw-web-sensitive-file-probe"),
    ("GET /.git/config HTTP/1.1", 403, 0, "lw-web-sensitive-file-probe"),
    ("GET /backup/shop_db_2024-03-12.sql.gz HTTP/1.1", 200, 1873256448, "lw-web-database-dump-download"),
    ("GET /media/keynote-recording.mp4 HTTP/1.1", 200, 734003200, "lw-web-large-download"),
])
def test_probing_and_large_or_dump_downloads(detector, request_line, status, size, rule_id):
    line = f'203.0.113.50 - - [12/Mar/2024:18:05:06 +0000] "{request_line}" {status} {size} "-" "Wget/1.21.2"'
    assert rule_id in fired(detector.scan([access(line)]))


OWNER = "/subscriptions/0000/providers/Microsoft.Authorization/roleDefinitions/8e3af657-a8ff-443c-a75c-2fe8c4bcb635"


READER = "/subscriptions/0000/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"


def _azure_monitor(operation: str, result: str = "Success", second: int = 0, **properties) -> dict:
    """Azure Monitor's export (storage account / `{"records": [...]}`)."""
    return {"time": f"2025-04-02T10:00:{second:02d}.1234567Z", "operationName": operation.upper(),
            "resourceId": "/SUBSCRIPTIONS/0000/RESOURCEGROUPS/RG1", "category": "Administrative", "resultType": result,
            "callerIpAddress": "45.9.20.11", "level": "Information",
            "identity": {"claims": {"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn": "mallory@contoso.com",
                                    "ipaddr": "45.9.20.11"}},
            "properties": {k: json.dumps(v) if isinstance(v, dict) else v for k, v in properties.items()}}


def _azure_rest(operation: str, status: str = "Succeeded", **properties) -> dict:
    """The REST API / Event Hub shape: operationName and status are {value, localizedValue}."""
    return {"eventTimestamp": "2025-04-02T10:01:00.0Z", "caller": "mallory@contoso.com", "claims": {"ipaddr": "45.9.20.11"},
            "operationName": {"value": operation, "localizedValue": operation}, "status": {"value": status},
            "httpRequest": {"clientIpAddress": "45.9.20.11"},
            "properties": {k: json.dumps(v) if isinstance(v, dict) else v for k, v in properties.items()}}


def _azure_analytics(operation: str, status: str = "Success", **properties) -> dict:
    """Log Analytics' AzureActivity table."""
    return {"TimeGenerated": "2025-04-02T10:02:00Z", "OperationNameValue": operation, "ActivityStatusValue": status,
            "Caller": "mallory@contoso.com", "CallerIpAddress": "45.9.20.11", "Properties": json.dumps(properties)}


ROLE_BODY = {"properties": {"roleDefinitionId": OWNER, "principalId": "p1", "principalType": "User"}}


NSG_BODY = {"properties": {"protocol": "*", "sourceAddressPrefix": "*", "destinationPortRange": "3389",
                           "access": "Allow", "direction": "Inbound", "priority": 100}}


@pytest.mark.parametrize("record, rule_id", [
    (_azure_monitor("Microsoft.Authorization/roleAssignments/write", responseBody=ROLE_BODY), "lw-azure-privileged-role-assigned"),
    (_azure_rest("Microsoft.Authorization/roleAssignments/write", requestbody=ROLE_BODY), "lw-azure-privileged-role-assigned"),
    (_azure_analytics("MICROSOFT.AUTHORIZATION/ROLEASSIGNMENTS/WRITE", requestbody=ROLE_BODY), "lw-azure-privileged-role-assigned"),
    (_azure_rest("Microsoft.Network/networkSecurityGroups/securityRules/write", "Started", requestbody=NSG_BODY),
     "lw-azure-nsg-open-to-world"),
    (_azure_monitor("Microsoft.Insights/diagnosticSettings/delete"), "lw-azure-logging-disabled"),
    (_azure_analytics("Microsoft.Compute/virtualMachines/runCommand/action", "Succeeded"), "lw-azure-vm-run-command"),
    (_azure_monitor("Microsoft.Compute/disks/beginGetAccess/action"), "lw-azure-disk-exported"),
])
def test_azure_activity_rules_in_every_export_shape(rules, record, rule_id):
    events = parsed([json.dumps(record)], "json", "activity.json")
    assert (events[0].fields.get("src_ip"), events[0].fields.get("user")) == ("45.9.20.11", "mallory@contoso.com")
    assert events[0].ts is not None
    assert fired(Detector(rules).scan(events)) == {rule_id}


@pytest.mark.parametrize("record", [
    _azure_monitor("Microsoft.Authorization/roleAssignments/write", responseBody={"properties": {"roleDefinitionId": READER}}),
    _azure_monitor("Microsoft.Authorization/roleAssignments/write", "Failure", responseBody=ROLE_BODY),
    _azure_rest("Microsoft.Network/networkSecurityGroups/securityRules/write",
                requestbody={"properties": {**NSG_BODY["properties"], "sourceAddressPrefix": "10.0.0.0/8"}}),
    _azure_monitor("Microsoft.Insights/diagnosticSettings/write"),
    _azure_monitor("Microsoft.Compute/virtualMachines/start/action"),
])
def test_routine_azure_activity_is_quiet(rules, record):
    assert Detector(rules).scan(parsed([json.dumps(record)], "json", "activity.json")) == []


def test_azure_export_blob_is_expanded_and_key_vault_harvest_counts_distinct_secrets(rules):
    from _ingest_helpers import log_lines

    from logwarden.app.parse import parse_stream

    reads = [{"time": f"2025-04-02T10:03:{i:02d}Z", "operationName": "SecretGet", "category": "AuditEvent",
              "resultType": "Success", "callerIpAddress": "45.9.20.11", "identity": {"claim": {"upn": "app@contoso.com"}},
              "properties": {"id": f"https://kv1.vault.azure.net/secrets/{name}/1"}}
             for i, name in enumerate(["db-pass", "api-key", "smtp", "stripe", "jwt", "s3", "redis", "ldap", "vpn", "ssh"])]
    blob = json.dumps({"records": reads})
    decision, events = parse_stream(log_lines([blob]))
    events = list(events)
    assert (decision.name, decision.whole_file, len(events)) == ("json", True, 10)
    assert events[0].fields["user"] == "app@contoso.com"
    assert fired(Detector(rules).scan(events)) == {"lw-azure-keyvault-secret-harvest"}
    assert Detector(rules).scan(events[:9]) == []  # nine secrets: below the threshold


@pytest.mark.parametrize("lines", [
    [_k8s("create", "pods", subresource="exec", code=403)],
    [_k8s("create", "rolebindings", code=201, body={"roleRef": {"kind": "Role", "name": "pod-reader"}})],
    [_k8s("create", "pods", code=201, body={"spec": {"containers": [{"name": "x", "image": "nginx"}]}})],
    [_k8s("get", "secrets", name="s1", second=i) for i in range(10)],  # the same secret ten times
    [_k8s("get", "version", user="system:anonymous", uri="/version")],
])
def test_routine_kubernetes_activity_is_quiet(rules, lines):
    assert Detector(rules).scan(parsed(lines, "json", "k8s-audit.log")) == []


def _ual(operation: str, second: int = 0, user: str = "bob@contoso.com", **extra) -> str:
    return json.dumps({"CreationTime": f"2024-05-02T10:{second // 60:02d}:{second % 60:02d}", "Id": f"id{second}",
                       "Operation": operation, "OrganizationId": "0000", "RecordType": 1, "ResultStatus": "True",
                       "UserType": 0, "Version": 1, "Workload": "Exchange", "ClientIP": "45.9.20.11:52144",
                       "UserId": user, **extra})


def _params(**values: str) -> list[dict]:
    return [{"Name": k, "Value": v} for k, v in values.items()]


@pytest.mark.parametrize("lines, rule_id", [
    ([_ual("New-InboxRule", Parameters=_params(Name=".", ForwardTo="attacker@evil.example", StopProcessingRules="True"))],
     "lw-m365-mail-forwarding"),
    ([_ual("UpdateInboxRules", OperationProperties=[{"Name": "RuleActions", "Value": json.dumps(
        [{"ActionType": "Forward", "Recipients": ["attacker@evil.example"]}])}])], "lw-m365-mail-forwarding"),
    ([_ual("Set-Mailbox", Parameters=_params(Identity="bob", ForwardingSmtpAddress="smtp:x@evil.example"))],
     "lw-m365-mail-forwarding"),
    ([_ual("New-InboxRule", Parameters=_params(Name="x", SubjectContainsWords="invoice", MoveToFolder="RSS Feeds"))],
     "lw-m365-hiding-inbox-rule"),
    ([_ual("UserLoginFailed", i, user=f"u{i}@contoso.com", Workload="AzureActiveDirectory") for i in range(5)],
     "lw-m365-password-spray"),
    ([_ual("Add member to role.", Workload="AzureActiveDirectory", ModifiedProperties=[
        {"Name": "Role.DisplayName", "NewValue": "Global Administrator", "OldValue": ""}])], "lw-m365-admin-role-added"),
    ([_ual("Add-MailboxPermission", Parameters=_params(Identity="ceo", User="mallory", AccessRights="FullAccess"))],
     "lw-m365-mailbox-delegation"),
    ([_ual("Consent to application.", Workload="AzureActiveDirectory")], "lw-m365-oauth-consent"),
    ([_ual("FileDownloaded", i, Workload="SharePoint", ObjectId=f"https://contoso.sharepoint.com/d/{i}.docx")
      for i in range(50)], "lw-m365-mass-download"),
])
def test_microsoft_365_audit_rules(rules, lines, rule_id):
    events = parsed(lines, "json", "ual.json")
    assert (events[0].fields["src_ip"], events[0].ts is not None) == ("45.9.20.11", True)
    assert fired(Detector(rules).scan(events)) == {rule_id}


@pytest.mark.parametrize("lines", [
    [_ual("New-InboxRule", Parameters=_params(Name="news", From="newsletter@shop.example", MoveToFolder="Newsletters"))],
    [_ual("Set-Mailbox", Parameters=_params(Identity="bob", ForwardingSmtpAddress=""))],  # forwarding removed
    [_ual("UserLoginFailed", i, Workload="AzureActiveDirectory") for i in range(5)],  # one account mistyping
    [_ual("FileDownloaded", i, Workload="SharePoint", ObjectId="https://contoso.sharepoint.com/d/same.docx")
     for i in range(60)],
])
def test_routine_microsoft_365_activity_is_quiet(rules, lines):
    assert Detector(rules).scan(parsed(lines, "json", "ual.json")) == []
