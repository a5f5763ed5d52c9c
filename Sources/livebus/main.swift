print("livebus")
