"""The Models window: models on this computer, the catalogue, the Hub search and downloads."""
