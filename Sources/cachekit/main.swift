print("cachekit")
