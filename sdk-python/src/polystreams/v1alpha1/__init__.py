"""Generated protocol code (buf generate); see proto/polystreams/v1alpha1/engine.proto."""
