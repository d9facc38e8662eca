"""Bearer tokens: verifying them into a principal (``tokens``) and the settings that
configure it (``settings``)."""
