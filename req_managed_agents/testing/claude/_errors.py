"""The codes the Claude API names a cause with: ``error.details.error_code``.

Every code the ``anthropic`` SDK types an error for (its typed errors pick a class by the
status and the code together), by the status it comes with, and the details some codes
carry besides the code. The routes answer with a code where the emulator models the cause
(see ``_wire._coded``); ``fail_requests(code=...)`` answers with any of them, its details
filled in with placeholders where the SDK's model of them requires more than the code.

The Managed Agents routes send some by themselves: ``environment_archived`` (an update of
an archived environment, or a session made in one), ``environment_not_found``,
``invalid_config_type_change``, ``invalid_metadata`` (metadata over its limits),
``file_not_downloadable``, ``heartbeat_precondition_failed`` (a work item's lease) and
``unsupported_charset`` (a ``Content-Type`` charset the API does not read). Platform-wide
ones (spend limits, ``organization_on_hold``, ``storage_not_ready``, ...) and the codes of
other APIs the SDK shares its errors with can only be injected.
"""

from __future__ import annotations

import copy
from typing import Any

# Each code the SDK types, by the HTTP status it comes with.
_CODES_BY_STATUS = {
    400: """
        already_member approval_required available_tools_limit_exceeded
        bundle_attachment_not_supported bundle_on_call
        cannot_invite_emails_with_unverified_domains cannot_remove_last_member
        cannot_sign_out_primary_owner cannot_sign_out_self
        claude_code_key_creator_not_member claude_code_version_too_old
        cmek_feature_unsupported cmek_key_disabled cmek_key_network_blocked
        cmek_not_approved compaction_block_ambiguous compaction_block_misplaced
        compaction_content_mismatch compaction_incomplete_turn
        compaction_nothing_to_summarize compaction_signature_invalid
        compaction_too_many_tool_references compaction_tool_changes_mismatch
        email_domain_not_allowed environment_archived external_key_in_workspace_policy
        external_key_not_found external_key_provider_mismatch
        external_key_validation_failed external_key_validation_timed_out
        external_storage_in_use external_storage_in_workspace_policy
        external_storage_not_available file_not_downloadable gcp_project_not_verified
        grant_required human_review_not_available human_review_on_with_external_storage
        image_dimensions_too_large invalid_config_type_change invalid_metadata
        invalid_storage_arn invite_already_exists key_profile_mismatch
        org_api_key_limit_exceeded org_member_limit_exceeded organization_not_eligible
        organization_not_enrolled_in_beta organization_on_hold
        organization_type_not_supported organization_url_fetch_disabled
        parent_organization_required provider_not_allowed rbac_group_grants_owner_access
        rbac_group_order_limit_exceeded rbac_group_owner_access_unconfirmed
        region_not_supported report_page_too_large request_body_encoding_invalid
        request_body_encoding_unsupported request_body_timeout scan_failed
        settings_document_limit_exceeded settings_history_limit_exceeded
        slack_channel_set_up_settings_refused storage_attach_limit_reached
        storage_not_approved storage_not_attachable storage_profile_mismatch
        storage_profile_still_required storage_quota_exceeded
        storage_verification_failed thread_already_continued thread_continue_in_flight
        thread_fingerprint_mismatch thread_unsupported_request too_many_report_groups
        tool_name_conflict tool_reference_unresolved transcripts_storage_required
        unsupported_charset unsupported_region user_profile_cleared
        user_profile_not_found user_profile_required workspace_api_key_limit_exceeded
        workspace_human_review_disabled workspace_member_limit_exceeded
        workspace_policy_violation
    """,
    402: """
        linked_organization_billing_unavailable linked_organization_spend_limit_reached
    """,
    403: """
        api_key_requester_unconfirmed api_key_scope_missing
        cannot_sign_out_managed_member cannot_sign_out_membership_admin
        cannot_sign_out_owner cannot_sign_out_privileged_member
        claude_tag_writes_not_enabled compliance_configuration_restricted
        environment_create_disabled environment_update_disabled
        organization_level_scoped_api_key_required sandbox_egress_restricted
        spend_limits_admin_api_writes_not_enabled user_profile_billing_not_authorized
        user_profile_not_billable
    """,
    404: """
        environment_not_found file_expired rbac_group_managed_settings_not_found
        rbac_group_not_found rbac_role_not_found
        slack_channel_set_up_environment_not_found thread_not_found
    """,
    409: """
        concurrent_membership_change external_key_changed
        gcp_project_controlled_by_another_organization plugin_name_taken scan_pending
        skill_name_taken skill_read_blocked_undecryptable
        slack_channel_set_up_settings_conflict storage_already_registered
        storage_attached_during_archive storage_changed_concurrently storage_in_use
        workspace_changed_concurrently
    """,
    412: """
        heartbeat_precondition_failed
    """,
    413: """
        request_body_too_large_after_decoding
    """,
    429: """
        contract_spend_limit_reached enforced_spend_limit_reached ramp_limit_exceeded
    """,
    503: """
        authorization_check_unavailable change_outcome_unknown cmek_context_unavailable
        cmek_key_unreachable registration_pending storage_not_ready
        workspace_created_incomplete
    """,
    529: """
        compaction_unavailable
    """,
}

ERROR_CODES: dict[str, int] = {
    code: status for status, codes in _CODES_BY_STATUS.items() for code in codes.split()
}

# What a code's details hold besides the code, where the SDK's model requires more: an
# injected error's placeholders (a route that sends the code gives the real values).
_REQUIRED_DETAILS: dict[str, dict[str, Any]] = {
    "heartbeat_precondition_failed": {
        "current_state": {
            "state": "stopped",
            "lease_extended": False,
            "ttl_seconds": 0,
            "last_heartbeat": None,
        }
    },
    "image_dimensions_too_large": {
        "paths": ["messages.0.content.0"],
        "max_side_length_pixels": 8000,
    },
    "storage_verification_failed": {"failed_checks": []},
    "workspace_policy_violation": {"field": "external_key_id"},
    "workspace_changed_concurrently": {"field": "inference_data_privacy.human_review"},
    "workspace_created_incomplete": {"workspace_id": "wrkspc_emulated"},
    "storage_profile_mismatch": {"field": "storage_id"},
    "storage_not_attachable": {"field": "storage_id"},
    "storage_changed_concurrently": {"field": "storage_id"},
    "approval_required": {"field": "inference_data_privacy.human_review"},
    "skill_name_taken": {"skill_name": "emulated"},
    "registration_pending": {
        "plugin_id": "plugin_emulated",
        "plugin_version_id": "pluginver_emulated",
    },
    "scan_failed": {"plugin_version_id": "pluginver_emulated"},
    "scan_pending": {"plugin_version_id": "pluginver_emulated"},
    "slack_channel_set_up_settings_refused": {"slack_channel_id": "C0EMULATED"},
    "slack_channel_set_up_environment_not_found": {"slack_channel_id": "C0EMULATED"},
    "slack_channel_set_up_settings_conflict": {"slack_channel_id": "C0EMULATED"},
}


def check_code(code: str, status: int) -> None:
    """Refuse (``ValueError``) a code the SDK does not type, or with another status."""
    expected = ERROR_CODES.get(code)
    if expected is None:
        raise ValueError(f"the anthropic SDK types no error code {code!r}")
    if expected != status:
        raise ValueError(f"the error code {code!r} comes with the status {expected}, not {status}")


def error_details(code: str, **given: Any) -> dict[str, Any]:
    """A code's ``details``: the code, what is ``given``, and placeholders for the rest of
    what the SDK requires."""
    return {"error_code": code, **copy.deepcopy(_REQUIRED_DETAILS.get(code, {})), **given}
