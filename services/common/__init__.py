"""Code the services share: settings, Kafka plumbing, the Postgres projection schema."""
