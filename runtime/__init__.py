"""What every Baton process runs on: settings from the environment, logging, the Temporal
client (with the data converter every payload goes through), the data folder, the PCM audio
helpers both planes share, and the per-process snapshot cache. Imports only `contracts`."""
