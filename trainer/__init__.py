"""The bundled pretraining loop: the model, the FSDP2 loop and its checkpoints (torch only)."""
