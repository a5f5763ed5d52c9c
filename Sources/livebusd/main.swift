print("livebusd")
