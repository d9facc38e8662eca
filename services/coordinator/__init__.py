"""The coordinator: a faust-streaming app that owns workflow state per partition."""
