export default function IntegrationPage() {
  return (
    <section className="page">
      <h1>Integration</h1>
    </section>
  );
}
