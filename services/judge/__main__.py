from services.judge.main import main

main()
