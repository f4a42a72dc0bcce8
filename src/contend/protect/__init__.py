"""contend protect: act on the watch's blame (model: pure; actuators: cgroup settings; daemon: beside the watch)."""
