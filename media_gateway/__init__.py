"""The media gateway: caller audio over WebSocket, speech over gRPC, signals to the workflow."""
