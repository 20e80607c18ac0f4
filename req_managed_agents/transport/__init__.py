"""HTTP plumbing shared by every provider: the pooled client, the one retry and backoff
policy, configuration from the environment, secret redaction and JSON helpers. Internal."""
