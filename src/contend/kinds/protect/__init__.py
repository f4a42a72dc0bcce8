"""The protect kind: detect's antagonist cases (trials of kinds/detect) run paired under no action, contend protect
and a fixed policy; the victim's isolation, reaction and the culprits' work kept judged from the store."""
