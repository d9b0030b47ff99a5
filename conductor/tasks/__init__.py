"""The conductor's operations, one module each; RPC methods hand off here."""
