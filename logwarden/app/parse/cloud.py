"""Cloud audit records: AWS CloudTrail (as delivered, through EventBridge, from lookup-events),
and the identities GCP audit logs and Azure Monitor exports keep deep in their JSON.

Owns: recognising a CloudTrail record or file, its fields, and the cloud identity helpers the
generic JSON parser applies. Knows nothing about what an event means (app/detect).
"""

from __future__ import annotations

from typing import Any

from logwarden.app.events import Event, LogLine
from logwarden.app.parse.base import new_event
from logwarden.app.parse.objects import ObjectParser, load_object, set_fields, text_of
from logwarden.app.parse.timestamps import parse_any


def cloudtrail_record(obj: dict) -> dict | None:
    """The CloudTrail record an object holds: itself; an EventBridge event's `detail` ("AWS API Call
    via CloudTrail", how CloudTrail reaches Lambda, SQS and most SIEM pipelines); an item of
    `aws cloudtrail lookup-events` (its `CloudTrailEvent`: the record as a JSON string)."""
    if "eventSource" in obj and "eventName" in obj:
        return obj
    detail = obj.get("detail")
    if isinstance(detail, dict) and "eventSource" in detail and "eventName" in detail:
        return detail
    text = obj.get("CloudTrailEvent")
    inner = load_object(text) if isinstance(text, str) else None
    if inner is not None and "eventSource" in inner and "eventName" in inner:
        return inner
    return None


def is_cloudtrail_file(obj: dict) -> bool:
    """A CloudTrail delivery file: `{"Records": [ {...}, ... ]}`."""
    records = obj.get("Records")
    return isinstance(records, list) and all(isinstance(r, dict) for r in records[:5])


def is_azure_export(obj: dict) -> bool:
    """An Azure Monitor export blob (activity, sign-in or diagnostic logs): `{"records": [...]}`
    and nothing else (an app log line may carry a "records" list of its own)."""
    records = obj.get("records")
    return set(obj) == {"records"} and isinstance(records, list) and all(isinstance(r, dict) for r in records[:5])


_CLOUDTRAIL_KEYS = ("eventName", "eventSource", "eventType", "awsRegion", "sourceIPAddress",
                    "userAgent", "errorCode", "errorMessage", "requestParameters",
                    "responseElements", "additionalEventData", "vpcEndpointId", "sessionCredentialFromConsole",
                    "readOnly", "recipientAccountId", "eventCategory", "managementEvent", "eventID")
_CLOUDTRAIL_DICTS = frozenset(("requestParameters", "responseElements", "additionalEventData"))


def cloudtrail_user(identity: Any) -> str | None:
    """userName, else the last part of the ARN, else "root" for the Root identity."""
    if not isinstance(identity, dict):
        return None
    if identity.get("userName"):
        return str(identity["userName"])
    arn = identity.get("arn")
    if isinstance(arn, str) and "/" in arn:
        return arn.rsplit("/", 1)[1]
    return "root" if identity.get("type") == "Root" else None


class CloudTrailParser(ObjectParser):
    """AWS CloudTrail records (one per line; whole files go through `parse_file_json`)."""

    name = "cloudtrail"

    def parse_object(self, obj: dict, line: LogLine) -> Event | None:
        obj = cloudtrail_record(obj)
        if obj is None:
            return None
        fields = {k: obj.get(k) for k in _CLOUDTRAIL_KEYS if k in obj or k in _CLOUDTRAIL_DICTS}
        identity = obj.get("userIdentity")
        identity = identity if isinstance(identity, dict) else {}
        set_fields(fields, userIdentity_type=identity.get("type"), userIdentity_arn=identity.get("arn"),
                  user=cloudtrail_user(identity), src_ip=text_of(obj.get("sourceIPAddress")),
                  user_agent=text_of(obj.get("userAgent")))  # the digest's "top user_agent": rclone/aws-cli vs the console
        params = fields.get("requestParameters")
        bucket = text_of(params.get("bucketName")) if isinstance(params, dict) else None
        # the bucket names what S3 data events touched: the digest's templates carry it to the model
        message = " ".join(str(v) for v in (fields.get("eventSource"), fields.get("eventName"), fields.get("user"), bucket,
                                            fields.get("errorCode")) if v)
        return new_event(line, "cloudtrail", ts=parse_any(obj.get("eventTime")),
                         program=text_of(obj.get("eventSource")), message=message, fields=fields)


_UPN_CLAIMS = ("http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn", "upn", "unique_name",
               "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name", "name")


def gcp_audit_identity(obj: dict, fields: dict) -> None:
    """GCP audit log entries keep the caller two levels down: `protoPayload.requestMetadata.callerIp`
    and `protoPayload.authenticationInfo.principalEmail` become `src_ip` and `user`."""
    payload = obj.get("protoPayload")
    if not isinstance(payload, dict):
        return
    caller = (payload.get("requestMetadata") or {}).get("callerIp")
    principal = (payload.get("authenticationInfo") or {}).get("principalEmail")
    set_fields(fields, src_ip=fields.get("src_ip") or text_of(caller), user=fields.get("user") or text_of(principal))


def azure_claims_identity(obj: dict, fields: dict) -> None:
    """Azure Monitor's activity-log export keeps the caller in `identity.claims` (Key Vault's in
    `identity.claim`): its UPN claim and `ipaddr`, two levels down."""
    identity = obj.get("identity")
    claims = (identity.get("claims") or identity.get("claim")) if isinstance(identity, dict) else None  # Key Vault: "claim"
    if not isinstance(claims, dict):
        return
    upn = next((claims[k] for k in _UPN_CLAIMS if isinstance(claims.get(k), str) and claims[k]), None)
    set_fields(fields, src_ip=fields.get("src_ip") or text_of(claims.get("ipaddr")), user=fields.get("user") or text_of(upn))

