/* hello: the program lmbench's fork+exec runs; exits at once. */
int main(void)
{
    return 0;
}
