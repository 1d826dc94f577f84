"""Generated gRPC code for proto/schedd/v1 (`make proto` rewrites the *_pb2* modules)."""
